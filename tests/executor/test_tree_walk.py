"""The app's walk of trees the sandbox's code made (agents/executor/tree_walk.py): any depth, a few descriptors,
and a tree moved under it stops it rather than leading it elsewhere."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agents.executor.local import worker_watch
from agents.executor.tree_walk import KEEP_OPEN, TreeWalk, WalkError, remove_tree
from tests.deep_trees import make_deep


def _open_in(tree: Path) -> int:
    """This process's descriptors open on `tree` or below it (other threads of the test process, say a sandbox
    closing from an earlier test, open and close their own meanwhile: only the walk's are counted)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed since the listing
        count += target == str(tree) or target.startswith(str(tree) + "/")
    return count


def test_the_walk_holds_a_few_descriptors_at_any_depth(tmp_path: Path) -> None:
    make_deep(str(tmp_path), 300, b"x", name="d")
    assert _open_in(tmp_path) == 0
    peak, depths = 0, []
    for entry in TreeWalk(str(tmp_path), 10_000):
        peak = max(peak, _open_in(tmp_path))
        depths.append(entry.depth)
    assert max(depths) == 300 and len(depths) == 301
    assert 1 <= peak <= KEEP_OPEN + 3 and _open_in(tmp_path) == 0


def test_a_folder_moved_during_the_walk_stops_it(tmp_path: Path) -> None:
    """Below the folders kept open the way back up is `..`: a worker moving a folder meanwhile must not lead the
    walk into another part of the tree (it would count that part twice, or another's not at all)."""
    make_deep(str(tmp_path), 20, b"x", name="d")
    walk = TreeWalk(str(tmp_path), 10_000)
    with pytest.raises(WalkError, match="moved during the walk") as caught:
        for entry in walk:
            if entry.depth == 15:
                os.rename(os.path.join(tmp_path, *["d"] * 12), tmp_path / "moved")
    assert caught.value.changed


def test_a_count_that_keeps_failing_fails_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "f").write_text("x")

    def changing(*args: object, **kwargs: object) -> None:
        raise WalkError("the folder changed during the walk", changed=True)

    monkeypatch.setattr(TreeWalk, "__iter__", changing)
    use = worker_watch.usage([str(tmp_path)])
    assert not use.complete and "changed" in use.why


@pytest.mark.slow  # 3,000 folders made and removed one by one (about 4 s)
def test_a_tree_too_deep_for_rmtree_is_removed(tmp_path: Path) -> None:
    """shutil.rmtree recurses once per folder: a workspace nested 3,000 deep raised RecursionError (which
    `ignore_errors` does not cover) when its chat was deleted, and stayed on the disk."""
    ws = tmp_path / "ws"
    ws.mkdir()
    make_deep(str(ws), 3000, b"x", name="d")
    with pytest.raises(RecursionError):
        shutil.rmtree(ws, ignore_errors=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("k")
    os.symlink(outside, ws / "link")
    assert remove_tree(str(ws)) is None and not ws.exists()
    assert (outside / "keep").read_text() == "k"  # the link went, not what it points to
    assert remove_tree(str(ws)) is None  # already gone
