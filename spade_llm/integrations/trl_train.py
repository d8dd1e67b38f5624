"""``spade train``: the closed loop on TRL in one command. A ``spade serve-env`` behind (its own process: the
curriculum, validation, the records), TRL's ``GRPOTrainer`` in front with ``SpadeLiveEnv`` as its environment:
the ``num_generations`` rollouts of a prompt play one task (``live_dataset``'s groups), each rollout is an
episode the server judges and records, and the target difficulty follows the policy as it trains.

``OUT/run`` is the serve-env run directory (``spade report``, ``spade export`` and ``--resume`` read it as any
run's), ``OUT/model`` TRL's checkpoints and, at the end, the trained model (``save_model``). On a GPU with vLLM
installed the rollouts generate with vLLM (``use_vllm``, colocated); otherwise with plain transformers (on CPU
without a GPU: fp32). Importing this module imports neither TRL nor torch.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UserError, pip_install
from .trl_warm_start import WarmStart

__all__ = ["TrainPlan", "train_live"]

READY_TIMEOUT_S = 600.0
"""Longest wait for the serve-env process to listen (its first start imports openenv-core: seconds)."""
LISTENING = re.compile(r"listening on (http://\S+)")


@dataclass(frozen=True)
class TrainPlan:
    """What ``spade train`` trains, and where."""

    model: str
    """The policy: a local model folder or a Hugging Face id."""
    out: Path
    """``run/`` (the serve-env records) and ``model/`` (checkpoints, the trained model) go here."""
    steps: int
    num_generations: int
    server_args: tuple[str, ...] = ()
    """``spade serve-env`` flags for the curriculum's side (the generator's model, the sandbox...)."""
    seed: int = 0
    max_completion_length: int = 1024
    """Longest answer a rollout generates, in tokens (GRPO's ``max_completion_length``)."""
    warm: WarmStart | None = None
    """SFT and/or DPO on a run's exports before GRPO (``trl_warm_start``); None: GRPO from ``model``."""


def require_trainer() -> None:
    """Raises UserError naming the install when TRL, torch or openenv-core is missing."""
    missing = [name for name in ("trl", "torch", "openenv") if importlib.util.find_spec(name) is None]
    if missing:
        raise UserError(
            f"spade train needs {', '.join(missing)}: {pip_install('trl,env')} torch (without a GPU, torch's CPU "
            "wheel: pip install torch --index-url https://download.pytorch.org/whl/cpu)"
        )


@contextlib.contextmanager
def serve_env(plan: TrainPlan, log: Callable[[str], None]) -> Iterator[str]:
    """A ``spade serve-env`` process writing ``OUT/run``, its stderr relayed to ``log``; yields its url and
    stops it (SIGTERM: it records what it holds and says how to resume) at the end."""
    argv = [sys.executable, "-m", "spade_llm.cli", "serve-env", "--port", "0", "--out", str(plan.out / "run")]
    argv += ["--samples-per-task", str(plan.num_generations), "--seed", str(plan.seed), *plan.server_args]
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, errors="replace")
    assert process.stderr is not None
    url: list[str] = []
    listening = threading.Event()

    def relay() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            log(line.rstrip("\n"))
            found = LISTENING.search(line)
            if found and not url:
                url.append(found.group(1).rstrip(";,)"))
                listening.set()
        listening.set()  # ended before it listened

    reader = threading.Thread(target=relay, name="spade-train-serve-env", daemon=True)
    reader.start()
    try:
        if not listening.wait(READY_TIMEOUT_S) or not url:
            raise UserError(f"spade serve-env did not start (exit {process.poll()}): its lines are above")
        yield url[0]
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        reader.join(timeout=10)


def device_args(seed: int) -> dict[str, Any]:
    """What every TRL config of ``spade train`` is given: on a GPU bf16 where it has it, else the CPU in fp32."""
    import torch

    gpu = torch.cuda.is_available()
    return {"use_cpu": not gpu, "bf16": gpu and torch.cuda.is_bf16_supported(), "seed": seed}


def grpo_config(plan: TrainPlan) -> Any:
    """TRL's ``GRPOConfig`` for ``plan``: one prompt's group a device batch, vLLM on a GPU when installed."""
    import torch
    from trl import GRPOConfig

    vllm = torch.cuda.is_available() and importlib.util.find_spec("vllm") is not None
    return GRPOConfig(
        output_dir=str(plan.out / "model"),
        max_steps=plan.steps,
        num_generations=plan.num_generations,
        per_device_train_batch_size=plan.num_generations,
        gradient_accumulation_steps=1,
        max_completion_length=plan.max_completion_length,
        use_vllm=vllm,
        vllm_mode="colocate",
        logging_steps=1,
        save_steps=max(1, min(plan.steps, 100)),
        report_to="none",
        **device_args(plan.seed),
    )


def train_live(plan: TrainPlan, log: Callable[[str], None] = print) -> Path:
    """Train ``plan.model`` by GRPO on live serve-env episodes (see the module docstring); returns the folder
    the trained model was saved to.

    Raises:
        UserError: TRL, torch or openenv-core is missing, the output folder is not empty, the warm start's run
            has no rows for a stage, or serve-env did not start.
    """
    require_trainer()
    if plan.out.exists() and any(plan.out.iterdir()):
        raise UserError(f"{plan.out} is not empty: give a new folder (its run/ and model/ are made there)")
    plan.out.mkdir(parents=True, exist_ok=True)
    from trl import GRPOTrainer

    from .trl import SpadeLiveEnv, live_dataset

    model = plan.model
    if plan.warm is not None:
        from .trl_warm_start import export_warm_rows, warm_start

        folder = plan.out / "warm"
        rows = export_warm_rows(plan.warm, folder)  # every stage's data checked before any training
        model = warm_start(model, plan.warm, folder, rows, device_args(plan.seed), log)
    with serve_env(plan, log) as url:
        log(f"spade train: serve-env at {url}; training {model} for {plan.steps} steps -> {plan.out / 'model'}")
        trainer = GRPOTrainer(
            model=model,
            args=grpo_config(plan),
            train_dataset=live_dataset(plan.steps, num_generations=plan.num_generations),
            environment_factory=functools.partial(SpadeLiveEnv, url),
        )
        try:
            trainer.train()
        finally:
            for environment in getattr(trainer, "environments", None) or []:
                with contextlib.suppress(Exception):
                    environment._drop()  # an open session ends, so the server can stop
        saved = plan.out / "model"
        trainer.save_model(str(saved))
    log(f"spade train: the trained model is in {saved}; the episodes are in {plan.out / 'run'}")
    return saved


def server_args(pairs: Sequence[tuple[str, Any]]) -> tuple[str, ...]:
    """``spade serve-env`` flags from (flag, value) pairs, the ones not given left out."""
    args: list[str] = []
    for flag, value in pairs:
        if value is not None:
            args += [flag, str(value)]
    return tuple(args)
