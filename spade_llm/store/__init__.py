"""The store: a run directory on disk (``RunDir``, its journals), and ``read_run``, the one reader
of what a run wrote; ``check_integrity`` (the checks in ``integrity``) is what resume asks more
(``read_checked``: both in one pass, the bulk not held);
``written_by`` (``provenance``) which command wrote a directory."""

from .provenance import COMMANDS, check_written_by, run_command, written_by
from .records import (
    CheckedRun,
    LazyRows,
    MetricsRows,
    RunRecords,
    RunStream,
    apply_repairs,
    check_integrity,
    read_checked,
    read_run,
    record_at,
)
from .rundir import (
    JOURNALS,
    LOCK_FILE,
    METRICS,
    PLANS,
    PROPOSALS,
    REJECTED,
    TASK_STATS,
    TASKS,
    TRAJECTORIES,
    WRITE_ERRORS,
    RunDir,
    Store,
    read_jsonl,
    read_numbered,
    scrub_secrets,
)

__all__ = [
    "COMMANDS",
    "JOURNALS",
    "LOCK_FILE",
    "METRICS",
    "PLANS",
    "PROPOSALS",
    "REJECTED",
    "TASKS",
    "TASK_STATS",
    "TRAJECTORIES",
    "WRITE_ERRORS",
    "CheckedRun",
    "LazyRows",
    "MetricsRows",
    "RunDir",
    "RunRecords",
    "RunStream",
    "Store",
    "apply_repairs",
    "check_integrity",
    "check_written_by",
    "read_checked",
    "read_jsonl",
    "read_numbered",
    "read_run",
    "record_at",
    "run_command",
    "scrub_secrets",
    "written_by",
]
