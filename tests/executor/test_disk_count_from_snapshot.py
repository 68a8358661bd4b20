"""The disk check after a run counts the workspace from the run's own snapshot (one walk instead of two): the
answer must be the one a walk of its own gives, and a snapshot that could not list everything is never trusted."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from agents.executor import artifacts
from agents.executor.local.disk_limit import DiskLimit
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
