"""``spade train --warm-start RUN``: SFT and/or DPO on a finished run's exports before GRPO starts.

A stage trains on the run's *train* split only (the test split stays held out, as ``spade export`` keeps it):
``sft`` on the ``--final-only`` rows, as TRL's conversational prompt-completion form (the loss on the passing
answer alone, with any chat template: no ``{% generation %}`` markers needed); ``dpo`` on the ``dpo`` pairs.
Each stage starts from the model the one before saved (``OUT/warm/sft``, ``OUT/warm/dpo``), and GRPO from the
last. Both stages' rows are exported (``OUT/warm/*.jsonl``) before any training, so a run that has nothing to
give fails at once. Importing this module imports neither TRL nor torch.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..export.solver_rows import ExportFilters, export_run

__all__ = ["WARM_STAGES", "WarmStart", "export_warm_rows", "parse_stages", "warm_start"]

WARM_STAGES = ("sft", "dpo")
"""The stages a warm start can run, in the order they run."""
WHY_EMPTY = {
    "sft": "no trajectory of its train split passed",
    "dpo": "no task of its train split has both a passing and a failing answer to the same prompt (pairs need "
    "--samples-per-task >= 2 or repairs)",
}


@dataclass(frozen=True)
class WarmStart:
    """What ``spade train`` learns before GRPO, and from which run."""

    run: Path
    """A finished ``spade run`` (or ``serve-env``) directory: its exports are the data."""
    stages: tuple[str, ...] = ("sft",)
    """``sft``, ``dpo`` or both, run in ``WARM_STAGES`` order."""
    steps: int | None = None
    """Optimizer steps per stage; None: one pass over the stage's rows."""


def parse_stages(text: str) -> tuple[str, ...]:
    """``"dpo,sft"`` -> ``("sft", "dpo")``. Raises ValueError naming the known stages."""
    given = {part.strip() for part in text.split(",") if part.strip()}
    unknown = given - set(WARM_STAGES)
    if not given or unknown:
        raise ValueError(f"warm-start stages are {', '.join(WARM_STAGES)} (comma-separated), got {text!r}")
    return tuple(stage for stage in WARM_STAGES if stage in given)


def export_warm_rows(warm: WarmStart, folder: Path) -> dict[str, Path]:
    """Each stage's train rows, exported from ``warm.run`` into ``folder`` (made here; removed again when a
    stage has no rows, so a failed start leaves nothing behind).

    Raises:
        UserError: the run is missing or damaged, or a stage has no train rows (the message says why).
    """
    paths: dict[str, Path] = {}
    try:
        for stage in warm.stages:
            path = folder / f"{stage}.jsonl"
            written = export_run(warm.run, stage, path, ExportFilters(split="train", final_only=stage == "sft"))
            if written.train == 0:
                raise UserError(
                    f"--warm-start {stage}: {warm.run} has no {stage} rows to train on ({WHY_EMPTY[stage]}); "
                    f"`spade export {warm.run} --format {stage}` shows what the run holds"
                )
            paths[stage] = path
    except UserError:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return paths


def _rows(stage: str, path: Path) -> Any:
    """The stage's rows as the TRL trainer reads them: SFT as prompt/completion messages (loss on the answer)."""
    from datasets import load_dataset

    dataset = load_dataset("json", data_files=str(path), split="train")
    if stage == "sft":
        return dataset.map(
            lambda row: {"prompt": row["messages"][:-1], "completion": row["messages"][-1:]},
            remove_columns=dataset.column_names,
        )
    return dataset.select_columns(["prompt", "chosen", "rejected"])


def warm_start(
    model: str,
    warm: WarmStart,
    folder: Path,
    rows: Mapping[str, Path],
    trainer_args: Mapping[str, Any],
    log: Callable[[str], None] = print,
) -> str:
    """Run ``warm.stages`` on ``rows`` (``export_warm_rows``), each from the model the last saved; returns the
    folder of the last one (what GRPO starts from). ``trainer_args`` go to every stage's TRL config."""
    from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer

    current = model
    for stage in warm.stages:
        saved = folder / stage
        config = SFTConfig if stage == "sft" else DPOConfig
        args = config(
            output_dir=str(saved),
            max_steps=warm.steps if warm.steps is not None else -1,
            num_train_epochs=1,
            max_length=None,  # DPO would drop, without a word, every pair whose prompt reaches the limit
            save_strategy="no",
            logging_steps=1,
            report_to="none",
            **trainer_args,
        )
        trainer_class: Any = SFTTrainer if stage == "sft" else DPOTrainer
        dataset = _rows(stage, rows[stage])
        log(f"spade train: warm start, {stage} on {len(dataset)} rows of {warm.run} from {current} -> {saved}")
        trainer = trainer_class(model=current, args=args, train_dataset=dataset)
        trainer.train()
        trainer.save_model(str(saved))  # with its tokenizer: the next stage and GRPO load the folder
        current = str(saved)
    return current
