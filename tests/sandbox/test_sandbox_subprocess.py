"""The subprocess backend's own behaviour: dropping root, and cleaning up without touching anything else."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from spade_llm.sandbox import subprocess as sp
from spade_llm.sandbox.base import Limits, Program
from spade_llm.sandbox.common import host_uid


@pytest.mark.skipif(os.geteuid() != 0, reason="only root drops to another uid")
def test_root_runs_each_program_as_an_unprivileged_uid_of_its_own():
    box = sp.SubprocessSandbox(warn=False)
    if box.uid is None:
        pytest.skip("no interpreter the unprivileged uid can run here")
    source = "import os\nprint(os.getuid(), os.getgid(), os.getgroups())\nopen('f', 'w').write('x')\n"
    uids = []
    for _ in range(2):
        r = box.run(Program(source=source), Limits())
        assert r.status == "ok", r.stderr
        uid, gid, groups = r.stdout.split(" ", 2)
        assert uid == gid and groups == "[]\n"
        assert host_uid() < int(uid) <= host_uid() + sp.UID_RANGE
        uids.append(uid)
    assert uids[0] != uids[1]
    nproc = {n: s for n, s, _ in box._rlimits(Limits(max_processes=10), run_uid=int(uids[0]))}
    assert nproc["NPROC"] == 10  # a uid of its own: exactly the run's processes count


def test_scratch_removal_never_touches_the_parent(tmp_path, monkeypatch):
    os.chmod(tmp_path, 0o755)
    scratch = tmp_path / "spade-x"
    (scratch / "locked").mkdir(parents=True)
    (scratch / "locked" / "f").write_text("x")
    os.chmod(scratch / "locked", 0)
    real_rmdir = os.rmdir
    calls: list[object] = []

    def flaky_rmdir(path, *args, **kwargs):  # the scratch dir itself refuses once (a leftover wrote into it)
        if os.fspath(path) in (str(scratch), scratch.name) and not calls:
            calls.append(path)
            raise OSError(errno.ENOTEMPTY, "Directory not empty", str(path))
        return real_rmdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "rmdir", flaky_rmdir)
    sp._remove_tree(str(scratch))
    assert calls and stat.S_IMODE(os.stat(tmp_path).st_mode) == 0o755
    assert not scratch.exists()


def test_scratch_removal_never_follows_a_link_swapped_in_meanwhile(tmp_path, monkeypatch):
    """A process the run left (``setsid``) swaps a directory being removed for a link to a host folder:
    the removal must remove the link, not what it points to (as root, a host file)."""
    scratch = tmp_path / "spade-x"
    (scratch / "a" / "b").mkdir(parents=True)
    (scratch / "a" / "b" / "f").write_text("x")
    host = tmp_path / "host"
    (host / "b").mkdir(parents=True)
    (host / "b" / "keep").write_text("host file")
    os.chmod(host, 0o755)
    real_rmdir = os.rmdir
    swapped: list[bool] = []

    def racing_rmdir(path, *args, **kwargs):  # scratch/a/b is emptied; now the leftover strikes
        if os.fspath(path) in ("b", str(scratch / "a" / "b")) and not swapped:
            swapped.append(True)
            os.rename(scratch / "a", tmp_path / "moved")
            os.symlink(host, scratch / "a")
            raise OSError(errno.ENOTEMPTY, "Directory not empty", str(path))
        return real_rmdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "rmdir", racing_rmdir)
    sp._remove_tree(str(scratch))
    assert swapped
    assert (host / "b" / "keep").read_text() == "host file"
    assert stat.S_IMODE(os.stat(host).st_mode) == 0o755
    assert not scratch.exists() and (tmp_path / "moved").is_dir()
