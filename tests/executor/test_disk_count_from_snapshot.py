"""The disk check after a run counts the workspace from the run's own snapshot (one walk instead of two): the
answer must be the one a walk of its own gives, and a snapshot that could not list everything is never trusted."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from agents.executor import artifacts
from agents.executor.backend import SandboxSpec
from agents.executor.local.disk_limit import DiskLimit
from agents.executor.local.shared_disk import SharedDiskFiles
from tests.deep_trees import make_deep


def _tree(root: Path, files: int) -> None:
    (root / "sub" / "deeper").mkdir(parents=True)
    for i in range(files):
        (root / ("sub/deeper" if i % 2 else "sub") / f"f{i}.bin").write_bytes(b"x" * 5000 * (i + 1))
    os.symlink("/etc/passwd", root / "link")  # counted as an entry, never followed
    (root / "deep").mkdir()
    make_deep(str(root / "deep"), 200, b"y" * 100, name="d")  # deeper than the descriptors kept open


@pytest.mark.parametrize("max_files,max_mb", [(10_000, 100), (150, 100), (10_000, 1)])
def test_the_count_from_the_snapshot_is_the_walks_own(tmp_path: Path, max_files: int, max_mb: int) -> None:
    work, tmp = tmp_path / "ws", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    _tree(work, 120)
    (tmp / "left.bin").write_bytes(b"z" * 4096)
    limit = DiskLimit(str(work), str(tmp), max_mb, max_files)
    snap = artifacts.snapshot(str(work))
    assert snap.incomplete is None and snap.entries > 300
    assert limit.over(None, workspace=snap) == limit.over(None)


def test_a_snapshot_that_stopped_early_is_not_trusted(tmp_path: Path) -> None:
    """A snapshot cut short (past its entry cap, a folder it could not open) would undercount: the check walks."""
    work, tmp = tmp_path / "ws", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    _tree(work, 40)
    limit = DiskLimit(str(work), str(tmp), 1024, 100)
    forged = artifacts.Snapshot(entries=0, bytes=0, incomplete="more than 20,000 entries")
    why = limit.over(None, workspace=forged)
    assert why is not None and "max_disk_files" in why
    cut = artifacts.snapshot(str(work), max_entries=10)  # a real walk stopped by its cap
    assert cut.incomplete is not None
    assert limit.over(None, workspace=cut) == limit.over(None) == why


class _Files(SharedDiskFiles):
    """The shared-disk file operations alone, on a folder of the test's (no worker)."""

    def __init__(self, workdir: Path, uid: int | None) -> None:
        self.id, self.workdir, self._uid = "t", str(workdir), uid
        self.spec = SandboxSpec(workspace=None)


@pytest.mark.skipif(os.geteuid() != 0, reason="handing files to another user id needs root")
@pytest.mark.parametrize("cap", [None, 10])
def test_one_walk_hands_the_workspace_over_and_lists_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        cap: int | None) -> None:
    """Before a run the hand-over's walk also makes the snapshot: the same snapshot a walk of its own makes, and
    every entry handed over; past the snapshot's cap it walks on its own (`cap`: a small cap to get there)."""
    work = tmp_path / "ws"
    work.mkdir()
    _tree(work, 30)
    if cap is not None:
        monkeypatch.setattr(artifacts, "MAX_ENTRIES", cap)
    why, snap = _Files(work, 45678).push_and_snapshot()
    assert why is None and snap == artifacts.snapshot(str(work))
    assert snap.incomplete is None and len(snap.files) == 31 and snap.too_deep == 0
    owners = {os.lstat(os.path.join(d, n)).st_uid for d, dirs, files in os.walk(work) for n in dirs + files
              if not os.path.islink(os.path.join(d, n))}
    assert owners == {45678}
