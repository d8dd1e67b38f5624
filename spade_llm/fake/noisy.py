"""The ``noisy`` profile's sloppiness: answers dressed or broken the way careless models write them,
and tasks with a broken reference or test (each of which a validation gate must catch)."""

from __future__ import annotations

import random
import re
from typing import Any

from . import bank
from .perturb import perturb

__all__ = ["break_task", "noisy_wrapping"]


def noisy_wrapping(text: str, n: int, rng: random.Random) -> tuple[str, str]:
    """Dress a JSON answer the way sloppy models do; some dressings a parser cannot undo."""
    r = rng.random()
    if r < 0.09:
        cut = rng.randint(len(text) // 4, len(text) * 3 // 4)
        return text[:cut], "length"
    if r < 0.15:
        commas = [m.start() for m in re.finditer(r'",\n', text)]
        if commas:
            at = rng.choice(commas)
            return text[: at + 1] + text[at + 2 :], "stop"
        return text[: len(text) // 2], "stop"
    if r < 0.28:
        return f"Sure! Here are {n} new tasks:\n\n{text}\n\nLet me know if you would like more.", "stop"
    if r < 0.41:
        return f"```json\n{text}\n```", "stop"
    return text, "stop"


def break_task(task: bank.BankTask, data: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Spoil one task the way a careless generator does; the validation gates must catch each."""
    kinds = ["raises", "wrong_expected", "nondeterministic", "missing_entry_point", "syntax_error"]
    kind = rng.choice(kinds)
    ep = task.entry_point
    if kind == "raises":
        code = bank.mistake_code(task.variant, task.params_index, ep, "exception", rng)
        if code is not None:
            outcomes = bank.run_in_process(code, ep, task.inputs, time_limit_s=1.0)
            if any(o.status == "error" for o in outcomes):
                return {**data, "reference_code": code}
        kind = "syntax_error"
    if kind == "wrong_expected":
        candidates = [i for i, out in enumerate(task.outputs) if bank.json_roundtrips(out)]
        if candidates:
            i = rng.choice(candidates)
            tests = [dict(t) for t in data["tests"]]
            tests[i]["expected"] = perturb(task.outputs[i], rng, vary_text=False)
            return {**data, "tests": tests}
        kind = "nondeterministic"
    if kind == "nondeterministic":
        return {**data, "reference_code": _nondeterministic(task)}
    if kind == "missing_entry_point":
        return {**data, "reference_code": bank.rename_function(task.reference_code, ep, task.variant.entry_points, rng)}
    return {**data, "reference_code": bank.break_syntax(task.reference_code, ep, rng)}


def _nondeterministic(task: bank.BankTask) -> str:
    """The reference wrapped in a post-processing step whose result changes from run to run."""
    ep = task.entry_point
    impl = f"_{ep}_impl"
    core = re.sub(rf"\b{re.escape(ep)}\b(?=\s*\()", impl, task.reference_code)
    sample = next((o for o in task.outputs if o is not None), None)
    if isinstance(sample, list):
        body = "    result = list(result)\n    random.shuffle(result)  # order should not matter\n    return result\n"
    elif isinstance(sample, str):
        body = '    return "".join(set(result))  # drop repeated characters\n'
    else:
        body = "    if random.random() < 0.5:  # break ties at random\n        return None\n    return result\n"
    return f"import random\n\n{core}\n\ndef {ep}(*args):\n    result = {impl}(*args)\n{body}"
