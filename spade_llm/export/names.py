"""The names ``spade export`` takes, each list written once: the formats (the solver's and the
generator's), the filters' statuses and tiers, and verl's rewards.

``exports`` and ``proposal_exports`` check against them, ``config`` types the trainer's formats with them,
and ``cli.flags`` offers them as choices: so this module imports nothing but ``typing`` (``spade --help``
stays fast, with no pydantic).
"""

from __future__ import annotations

from typing import Final, Literal, get_args

__all__ = [
    "FORMATS",
    "GENERATOR_FORMATS",
    "STATUSES",
    "TIERS",
    "VERL_REWARDS",
    "ExportFormat",
    "GeneratorFormat",
]

GeneratorFormat = Literal["sft", "dpo", "grpo"]
"""What ``spade export --role generator`` writes."""
ExportFormat = Literal[GeneratorFormat, "verl", "harbor"]
"""What ``spade export`` writes for the solver (``harbor``: a folder of Harbor task folders)."""
FORMATS: Final[tuple[ExportFormat, ...]] = get_args(ExportFormat)
GENERATOR_FORMATS: Final[tuple[GeneratorFormat, ...]] = get_args(GeneratorFormat)
TIERS: Final = ("easy", "medium", "hard")
STATUSES: Final = ("passed", "failed", "error", "timeout")
VERL_REWARDS: Final = ("spade", "sandbox_fusion")
"""Who judges a verl export: ``spade_llm.rewards.compute_score``, or verl's own judges (SandboxFusion;
``prime_code`` too for program tasks, whose form is the same)."""
