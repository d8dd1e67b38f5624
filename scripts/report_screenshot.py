#!/usr/bin/env python3
"""Render a run's report, open it in headless Chromium, fail on console errors, and screenshot it.

    python scripts/report_screenshot.py RUN_DIR [--out docs/report.png] [--html FILE] [--open TASK_ID|auto]
                                        [--synthesize N] [--width 1280] [--no-screenshot]
                                        [--max-mb 10] [--max-load-s 5]

How the page is checked: Chromium is driven over the DevTools protocol on a pipe
(``--remote-debugging-pipe``: JSON messages separated by NUL bytes on file descriptors 3 and 4), so
no websocket client and no free port are needed. Every ``Runtime.exceptionThrown``, console
``error``/``assert`` call, ``Log.entryAdded`` at level ``error`` and JavaScript dialog (an injected
``alert``) counts as an error; so does a page over ``--max-mb`` or slower than ``--max-load-s``. The
script exits 1 when there is any. It prints the page's size, the time to render it (Python), and the
time Chromium took from navigation start to the first frame after the load event.

The docs screenshot: ``spade run --epochs 6 --samples-per-task 2 --out /tmp/r6 --quiet`` then
``python scripts/report_screenshot.py /tmp/r6 --open auto --out docs/report.png``. The size check:
``python scripts/report_screenshot.py /tmp/r6 --synthesize 10000 --no-screenshot``.

``--open TASK_ID`` (or ``auto``: a task with a repaired trajectory) loads the page with ``#task=ID``,
which the page's script honours by opening that task's trajectories, so the screenshot shows one.
``--synthesize N`` first builds a run of about N trajectories by replicating RUN_DIR's records under new
ids and later epochs (the size and speed check for large runs) and reports on that.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
MAX_SHOT_HEIGHT = 16000


def find_chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


class DevTools:
    """A Chromium process and its DevTools protocol over ``--remote-debugging-pipe``."""

    def __init__(self, binary: str, width: int, height: int) -> None:
        self.profile = tempfile.mkdtemp(prefix="spade-chromium-")
        to_child_r, self._write = os.pipe()
        self._read, from_child_w = os.pipe()
        # the child must see the pipe on fds 3 (reads) and 4 (writes); move ours out of the way first
        high_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
        high_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
        os.close(to_child_r)
        os.close(from_child_w)

        def wire() -> None:
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        args = [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--hide-scrollbars",
            "--remote-debugging-pipe",
            f"--user-data-dir={self.profile}",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=wire,
            close_fds=False,  # Python's own fds are not inheritable (PEP 446); dup2 makes 3 and 4 so
        )
        os.close(high_r)
        os.close(high_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    def send(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30.0) -> dict[str, Any]:
        """Send one command and wait for its answer, keeping the events that arrive meanwhile."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if self.session and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result") or {})
            self._event(reply)

    def wait_for(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        for event in self.events:
            if event.get("method") == method:
                return event
        deadline = time.monotonic() + timeout
        while True:
            message = self._receive(deadline)
            self._event(message)
            if message.get("method") == method:
                return message

    def _event(self, message: dict[str, Any]) -> None:
        self.events.append(message)
        if message.get("method") == "Page.javascriptDialogOpening":  # never leave the page blocked
            self._next_id += 1
            cmd = {"id": self._next_id, "method": "Page.handleJavaScriptDialog", "params": {"accept": True}}
            if self.session:
                cmd["sessionId"] = self.session
            os.write(self._write, json.dumps(cmd).encode() + b"\0")

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        return dict(json.loads(raw))

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.send("Browser.close", timeout=5)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)


@dataclass
class PageCheck:
    errors: list[str] = field(default_factory=list)
    load_ms: float = 0.0
    """Navigation start to the first frame after the load event, as Chromium measured it."""
    scripts: int = 0
    open_rows: int = 0
    detail_text: str = ""
    height: int = 0


def _error_lines(events: list[dict[str, Any]]) -> list[str]:
    errors = []
    for e in events:
        method, params = e.get("method"), e.get("params") or {}
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails") or {}
            text = (details.get("exception") or {}).get("description") or details.get("text")
            errors.append(f"exception: {text}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args") or [])
            errors.append(f"console.{params.get('type')}: {args}")
        elif method == "Log.entryAdded" and (params.get("entry") or {}).get("level") == "error":
            errors.append(f"log: {params['entry'].get('text')}")
        elif method == "Page.javascriptDialogOpening":
            errors.append(f"dialog ({params.get('type')}): {params.get('message')}")
    return errors


def check_page(
    html: Path, *, fragment: str | None = None, screenshot: Path | None = None, width: int = 1280,
    binary: str | None = None, timeout: float = 60.0,
) -> PageCheck:  # fmt: skip
    """Load ``html`` (with ``#fragment``) in headless Chromium, collect errors, optionally screenshot it."""
    chromium = binary or find_chromium()
    if chromium is None:
        raise RuntimeError("no Chromium found (looked for " + ", ".join(CHROMIUM_NAMES) + ")")
    tools = DevTools(chromium, width, 900)
    try:
        target = tools.send("Target.createTarget", {"url": "about:blank"}, timeout=timeout)["targetId"]
        tools.session = tools.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            tools.send(f"{domain}.enable")
        tools.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        )
        url = html.resolve().as_uri() + (f"#{fragment}" if fragment else "")
        tools.send("Page.navigate", {"url": url}, timeout=timeout)
        tools.wait_for("Page.loadEventFired", timeout=timeout)
        frame = "new Promise(r => requestAnimationFrame(() => setTimeout(() => r(performance.now()), 0)))"
        load_ms = tools.send("Runtime.evaluate", {"expression": frame, "awaitPromise": True, "returnByValue": True})
        probe = (
            "JSON.stringify({scripts: document.scripts.length, open: document.querySelectorAll('tr.detail-row').length,"
            " text: Array.from(document.querySelectorAll('tr.detail-row')).map(r => r.textContent).join('\\n'),"
            " height: document.documentElement.scrollHeight})"
        )
        found = json.loads(
            tools.send("Runtime.evaluate", {"expression": probe, "returnByValue": True})["result"]["value"]
        )
        check = PageCheck(
            load_ms=float(load_ms["result"]["value"]),
            scripts=int(found["scripts"]),
            open_rows=int(found["open"]),
            detail_text=str(found["text"]),
            height=int(found["height"]),
        )
        if screenshot is not None:
            height = min(check.height, MAX_SHOT_HEIGHT)
            tools.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            )
            shot = tools.send(
                "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False}, timeout=timeout
            )
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
            shrink_png(screenshot)
        tools.send("Runtime.evaluate", {"expression": "1"})  # let late events arrive before counting
        check.errors = _error_lines(tools.events)
        return check
    finally:
        tools.close()


def shrink_png(path: Path) -> None:
    """Re-save a screenshot with a 256-colour palette when Pillow is there (matplotlib brings it): a
    page of flat colours loses nothing visible and the file shrinks to about a third."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as image:
        # max-coverage with a k-means pass keeps the page's exact series colours and light tints
        rgb = image.convert("RGB")
        small = rgb.quantize(colors=256, method=Image.Quantize.MAXCOVERAGE, kmeans=3, dither=Image.Dither.NONE)
    small.save(path, optimize=True)


# -- a large run from a small one -----------------------------------------------------------------


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path: Path, records: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def synthesize(source: Path, target: Path, trajectories: int) -> Path:
    """A run of about ``trajectories`` episodes: ``source``'s records copied again and again, each copy
    with new task and trajectory ids (suffix ``-cN``) and its epochs shifted after the previous copy's."""
    trajs = _read(source / "trajectories.jsonl")
    metrics = _read(source / "metrics.jsonl")
    if not trajs or not metrics:
        raise SystemExit(f"{source}: no trajectories or metrics to replicate")
    copies = max(1, -(-trajectories // len(trajs)))
    span = max(int(m["epoch"]) for m in metrics) + 1
    target.mkdir(parents=True, exist_ok=True)
    for name in ("config.yaml", "manifest.json"):
        if (source / name).exists():
            shutil.copy(source / name, target / name)
    out: dict[str, list[dict[str, Any]]] = {}

    def shifted(record: dict[str, Any], c: int, ids: tuple[str, ...]) -> dict[str, Any]:
        r = json.loads(json.dumps(record))
        for key in ids:
            if isinstance(r.get(key), str):
                r[key] = f"{r[key]}-c{c}"
        if isinstance(r.get("epoch"), int):
            r["epoch"] += c * span
        if isinstance(r.get("meta"), dict) and isinstance(r["meta"].get("epoch"), int):
            r["meta"]["epoch"] += c * span
        return r

    for name, ids in (
        ("tasks.jsonl", ("task_id",)),
        ("rejected.jsonl", ("task_id",)),
        ("trajectories.jsonl", ("task_id", "trajectory_id")),
        ("task_stats.jsonl", ("task_id",)),
        ("metrics.jsonl", ()),
        ("plans.jsonl", ()),
    ):
        records = _read(source / name)
        out[name] = [shifted(r, c, ids) for c in range(copies) for r in records]
    for name, records in out.items():
        _write(target / name, records)
    summary = json.loads((source / "summary.json").read_text()) if (source / "summary.json").exists() else {}
    summary.update(
        epochs=span * copies, trajectories=len(out["trajectories.jsonl"]), tasks_accepted=len(out["tasks.jsonl"])
    )
    llm = summary.get("llm") or {}
    for counts in [llm, *(llm.get("by_role") or {}).values()]:
        for key in ("requests", "retries", "failures"):
            if isinstance(counts.get(key), int):
                counts[key] *= copies
    (target / "summary.json").write_text(json.dumps(summary, indent=2))
    with (target / "config.yaml").open("a", encoding="utf-8") as f:
        f.write(f"# synthesized: {copies} copies of {source}\n")
    _set_epochs(target / "config.yaml", span * copies)
    return target


def _set_epochs(config: Path, epochs: int) -> None:
    import yaml

    data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    data.setdefault("controller", {})["epochs"] = epochs
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def repaired_task(run_dir: Path) -> str | None:
    """A task with an episode that passed after a failed turn: the most telling one to open."""
    for t in _read(run_dir / "trajectories.jsonl"):
        if t.get("final_status") == "passed" and len(t.get("attempts") or []) > 1:
            return str(t["task_id"])
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--out", type=Path, default=Path("docs/report.png"), help="the screenshot (PNG)")
    parser.add_argument("--html", type=Path, default=None, help="where the report goes (default RUN_DIR/report.html)")
    parser.add_argument("--open", dest="open_task", default=None, help="a task id to open, or 'auto'")
    parser.add_argument(
        "--synthesize", type=int, default=0, metavar="N", help="report on a replicated run of ~N trajectories"
    )
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--no-screenshot", action="store_true")
    parser.add_argument("--max-mb", type=float, default=10.0, help="fail when the page is larger (default 10)")
    parser.add_argument("--max-load-s", type=float, default=5.0, help="fail when Chromium takes longer (default 5)")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from spade_llm.report import render_report

    run_dir: Path = args.run_dir
    scratch = None
    if args.synthesize:
        scratch = tempfile.mkdtemp(prefix="spade-synth-")
        run_dir = synthesize(run_dir, Path(scratch) / "run", args.synthesize)
        print(f"synthesized {run_dir}: {sum(1 for _ in (run_dir / 'trajectories.jsonl').open()):,} trajectories, "
              f"{(run_dir / 'trajectories.jsonl').stat().st_size / 1e6:.1f} MB of them")  # fmt: skip
    try:
        started = time.perf_counter()
        html = render_report(run_dir, args.html)
        render_s = time.perf_counter() - started
        size = html.stat().st_size
        task = repaired_task(run_dir) if args.open_task == "auto" else args.open_task
        from urllib.parse import quote

        fragment = f"task={quote(task, safe='')}" if task else None
        shot = None if args.no_screenshot else args.out
        check = check_page(html, fragment=fragment, screenshot=shot, width=args.width)
        print(f"report: {html} ({size / 1e6:.2f} MB), rendered in {render_s:.2f} s")
        print(f"chromium: loaded and painted in {check.load_ms / 1000:.2f} s, page {check.height:,} px tall, "
              f"{check.scripts} script elements, {check.open_rows} task(s) open")  # fmt: skip
        if shot is not None:
            print(f"screenshot: {shot} ({shot.stat().st_size / 1e3:.0f} kB)")
        if task and not check.open_rows:
            check.errors.append(f"#task={task} did not open the task")
        if size > args.max_mb * 1e6:
            check.errors.append(f"the page is {size / 1e6:.2f} MB, over {args.max_mb:g} MB")
        if check.load_ms > args.max_load_s * 1000:
            check.errors.append(f"Chromium took {check.load_ms / 1000:.2f} s, over {args.max_load_s:g} s")
        for line in check.errors:
            print(f"ERROR {line}", file=sys.stderr)
        return 1 if check.errors else 0
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
