"""Back-to-back steps skip the workspace walk before a run: the walk that ended the last run stands for the
workspace (the worker frozen since). What must still hold: every file a step makes is reported, the app's own
file operations between steps are never taken for the next step's files, a file dropped in the top folder by
other means is not either, and a walk that began earlier never replaces one that began later."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.executor import PythonSandbox, artifacts
from agents.executor.local import shared_disk


def _names(result) -> set[str]:
    return {a.path for a in result.artifacts}


@pytest.fixture()
def sb(tmp_path: Path):
    with PythonSandbox(str(tmp_path / "ws"), timeout_s=60) as sandbox:
        sandbox.run("x = 0")
        yield sandbox


def test_each_back_to_back_step_reports_its_own_files(sb):
    for i in range(5):
        result = sb.run(f"open('out{i}.txt', 'w').write('{i}'); x += 1")
        assert _names(result) == {f"out{i}.txt"}, result.artifacts
    rewritten = sb.run("open('out0.txt', 'w').write('changed, and longer')")
    assert _names(rewritten) == {"out0.txt"}


@pytest.mark.parametrize("folder", ["", "data/"])
def test_a_file_put_between_steps_is_not_the_next_steps(sb, folder):
    """In a subfolder too, where the top folder's stat does not change: the file operations forget the walk."""
    sb.run("import os; os.makedirs('data', exist_ok=True)")
    sb.host.put_file(f"{folder}upload.csv", b"a,b\n1,2\n")
    result = sb.run(f"rows = open('{folder}upload.csv').read().splitlines(); len(rows)")
    assert result.error is None and result.output == 2
    assert _names(result) == set()
    sb.host.put_file(f"{folder}upload.csv", b"a,b\n1,2\n3,4\n")  # the same name again, in place
    assert _names(sb.run("x += 1")) == set()
    sb.host.remove_file(f"{folder}upload.csv")
    assert _names(sb.run("x += 1")) == set()


def test_a_file_dropped_in_the_top_folder_by_other_means_is_not_the_next_steps(sb):
    sb.run("x += 1")
    Path(sb.workdir, "dropped.txt").write_text("from outside")
    assert _names(sb.run("x += 1")) == set()


def test_the_walk_is_reused_only_while_it_is_fresh(sb, monkeypatch):
    walks: list[str] = []
    real = artifacts.SnapshotBuilder.__init__

    def counting(self, workdir: str) -> None:
        walks.append(workdir)
        real(self, workdir)

    monkeypatch.setattr(artifacts.SnapshotBuilder, "__init__", counting)
    sb.run("x += 1")
    walks.clear()
    sb.run("x += 1")
    assert len(walks) == 1  # the walk after the run; the one before was the last run's
    monkeypatch.setattr(shared_disk, "REUSE_WALK_S", 0.0)
    walks.clear()
    sb.run("x += 1")
    assert len(walks) == 2  # too old: walked before and after


def test_an_earlier_walk_never_replaces_a_later_one(tmp_path: Path):
    work = tmp_path / "ws"
    work.mkdir()

    class Files(shared_disk.SharedDiskFiles):
        def __init__(self) -> None:
            self.id, self.workdir, self._uid = "t", str(work), None

    files = Files()
    top = shared_disk._top_stat(str(work))
    assert top is not None
    later = artifacts.Snapshot(files={"later.txt": (1, 1)})
    files._remember_walk(later, started=10.0, top=top)
    files._remember_walk(artifacts.Snapshot(files={"earlier.txt": (1, 1)}), started=5.0, top=top)
    assert files._last_walk is not None and files._last_walk.snapshot is later
    cut = artifacts.Snapshot(incomplete="more than 20,000 entries")
    files._remember_walk(cut, started=11.0, top=top)
    assert files._last_walk is None  # a later walk that could not list everything: nothing stands for it
