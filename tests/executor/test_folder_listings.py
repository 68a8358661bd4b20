"""Folder listings reused between walks (folder_listings.py): a walk that reuses them must count and list exactly what
a walk that lists every folder does, whatever changed in the tree since: entries added, removed or renamed deep in
it, hard links, files grown in place (no folder changes), folders replaced; and only settled folders of trusted file
systems are reused."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from agents.executor import artifacts, folder_listings
from agents.executor.folder_listings import FolderListings
from agents.executor.local import worker_watch
from agents.executor.tree_walk import TooManyEntries, TreeWalk
from tests.waiting import wait_until


def _walk(root: Path, listings: FolderListings | None = None, max_entries: int = 10_000) -> list[tuple[str, int, int]]:
    walk = TreeWalk(str(root), max_entries, listings=listings)
    return sorted((walk.relpath(e.name), e.st.st_size, e.st.st_blocks) for e in walk)


def _settle(root: Path, listings: FolderListings) -> None:
    """Walk until every folder's listing is reused (its ctime is old enough: SETTLE_FINE_NS, 50 ms)."""
    folders = 1 + sum(1 for _ in root.rglob("*") if _.is_dir() and not _.is_symlink())

    def reused_all() -> bool:
        before = listings.reused
        _walk(root, listings)
        return listings.reused - before == folders

    wait_until(reused_all, timeout=10, what="the folders' listings to be reused")


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "top.txt").write_text("top")
    (root / "a" / "b" / "c" / "deep.txt").write_text("deep")
    (root / "a" / "mid.bin").write_bytes(b"m" * 5000)
    return root


def test_a_settled_tree_is_walked_without_listing_and_counts_the_same(tree):
    listings = FolderListings()
    _settle(tree, listings)
    listed = listings.listed
    assert _walk(tree, listings) == _walk(tree)
    assert listings.listed == listed  # no folder listed again


@pytest.mark.parametrize("change", [
    "add deep", "remove deep", "rename deep", "hard link deep", "grow in place", "grow through an old fd",
    "replace a folder", "many small files", "symlink deep", "folder added deep",
])
def test_every_change_since_the_listings_were_kept_is_seen(tree, change):
    listings = FolderListings()
    held = open(tree / "a" / "b" / "c" / "deep.txt", "ab")  # held across the settle, as a step holds an fd
    try:
        _settle(tree, listings)
        deep = tree / "a" / "b" / "c"
        if change == "add deep":
            (deep / "new.txt").write_text("new")
        elif change == "remove deep":
            (deep / "deep.txt").unlink()
        elif change == "rename deep":
            (deep / "deep.txt").rename(deep / "renamed.txt")
        elif change == "hard link deep":
            os.link(tree / "a" / "mid.bin", deep / "link.bin")
        elif change == "grow in place":
            with open(tree / "a" / "mid.bin", "r+b") as fh:
                fh.seek(0, os.SEEK_END)
                fh.write(b"g" * 100_000)
        elif change == "grow through an old fd":
            held.write(b"h" * 100_000)
            held.flush()
        elif change == "replace a folder":
            os.rename(tree / "a" / "b", tree / "old_b")
            (tree / "a" / "b").mkdir()
            (tree / "a" / "b" / "other.txt").write_text("other")
        elif change == "many small files":
            for i in range(200):
                (deep / f"small{i}.txt").write_text("s")
        elif change == "symlink deep":
            os.symlink("/etc/passwd", deep / "link")
        elif change == "folder added deep":
            (deep / "d" / "e").mkdir(parents=True)
            (deep / "d" / "e" / "f.txt").write_text("f")
        assert _walk(tree, listings) == _walk(tree)
        use = worker_watch.usage([str(tree)], listings={str(tree): listings})
        plain = worker_watch.usage([str(tree)])
        assert (use.files, use.bytes) == (plain.files, plain.bytes)
    finally:
        held.close()


def test_the_snapshot_lists_files_added_in_settled_subfolders(tree):
    listings = FolderListings()
    before = artifacts.snapshot(str(tree), listings=listings)
    _settle(tree, listings)
    (tree / "a" / "b" / "c" / "chart.png").write_bytes(b"png")
    after = artifacts.snapshot(str(tree), listings=listings)
    assert [a.path for a in artifacts.diff(str(tree), before, after)] == ["a/b/c/chart.png"]


def test_a_folder_changed_lately_is_listed_again(tree):
    listings = FolderListings()
    (tree / "fresh.txt").write_text("now")  # the top folder's ctime is now: not settled
    _walk(tree, listings)
    listed = listings.listed
    _walk(tree, listings)
    assert listings.listed > listed


def test_an_untrusted_file_system_is_always_listed(tree):
    listings = FolderListings(fs_type=lambda device: "nfs")
    for _ in range(3):
        _walk(tree, listings)
    assert listings.reused == 0


def test_a_whole_second_ctime_must_be_older_than_two_seconds():
    """A file system that keeps whole seconds stamps a change within the same second alike."""
    listings = FolderListings(fs_type=lambda device: "ext4")
    now = time.time_ns()
    whole = (now // 1_000_000_000 - 1) * 1_000_000_000  # a second or two ago, a whole second
    fine = now - 100_000_000 + 1  # 0.1 s ago, with a fraction
    walk = listings.walk()
    for ino, ctime in ((1, whole), (2, fine)):
        walk.keep(SimpleNamespace(st_dev=1, st_ino=ino, st_ctime_ns=ctime), ["x"])  # type: ignore[arg-type]
    walk.finish()
    again = listings.walk()
    assert again.names(SimpleNamespace(st_dev=1, st_ino=1, st_ctime_ns=whole)) is None  # type: ignore[arg-type]
    assert again.names(SimpleNamespace(st_dev=1, st_ino=2, st_ctime_ns=fine)) == ("x",)  # type: ignore[arg-type]


def test_reused_listings_still_hold_the_entry_cap(tree):
    listings = FolderListings()
    for i in range(50):
        (tree / "a" / f"f{i}").write_text("x")
    _settle(tree, listings)
    with pytest.raises(TooManyEntries):
        _walk(tree, listings, max_entries=20)


def test_the_file_system_type_is_read_from_mountinfo(tmp_path):
    device = os.stat(tmp_path).st_dev
    kind = folder_listings.filesystem_type(device)
    assert kind is not None and kind.isprintable()
    fake = tmp_path / "mountinfo"
    fake.write_text(f"27 1 {os.major(device)}:{os.minor(device)} / / rw,relatime - fuse.sshfs host:/ rw\n")
    assert folder_listings.filesystem_type(device, str(fake)) == "fuse.sshfs"
    assert folder_listings.filesystem_type(os.makedev(4095, 4095), str(fake)) is None
