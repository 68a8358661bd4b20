"""Files created or changed in the workspace by a run, found by the app (not the worker).

Why the app scans: the worker runs untrusted code and could lie about paths;
the app compares two snapshots it took itself, never follows symbolic links,
and reports regular files only.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from .tree_walk import Entry, TreeWalk, WalkError

if TYPE_CHECKING:
    from .folder_listings import FolderListings

IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".svg", ".gif", ".webp"})
MAX_ENTRIES = 20000
PATH_MAX = 4096  # the system's limit on a path the rest of the app opens by name


@dataclass(frozen=True)
class Artifact:
    """A file a run created or changed.

    ``path`` is relative to the sandbox's workdir (POSIX separators);
    ``abs_path`` is the absolute path on the app's side.
    """

    path: str
    abs_path: str
    kind: Literal["image", "file"]
    size: int
    mtime: float
    created: bool


@dataclass
class Snapshot:
    """Relative path -> (size, mtime_ns) of the regular files under the workdir, and what could not be listed."""

    files: dict[str, tuple[int, int]] = field(default_factory=dict)
    too_deep: int = 0  # files whose path is past PATH_MAX: they exist, but cannot be shown by name
    incomplete: str | None = None  # why the walk stopped early (files past that point are not listed)
    # Every entry the walk met (files, folders, links, ...) and the bytes they take, folders' own included: the
    # disk limit's count of the workspace (worker_watch.usage), valid only when `incomplete` is None.
    entries: int = 0
    #: The workspace folder's own stat as the walk opened it (None: no folder, or not from a walk of its own).
    root: os.stat_result | None = field(default=None, repr=False, compare=False)
    bytes: int = 0

    def notes(self) -> list[str]:
        """What a run's output should say about files the list leaves out."""
        out = []
        if self.too_deep:
            files = "1 file lies" if self.too_deep == 1 else f"{self.too_deep:,} files lie"
            out.append(f"{files} deeper in the workspace than a path can name ({PATH_MAX:,} characters): they "
                       "are there, but are not listed as the run's files")
        if self.incomplete:
            out.append(f"the workspace's files were not all listed: {self.incomplete}")
        return out


def snapshot(workdir: str, max_entries: int = MAX_ENTRIES, listings: FolderListings | None = None) -> Snapshot:
    """The regular files under workdir, at any depth, links never followed (tree_walk.py); fails closed into
    `incomplete`, never into a quietly shorter list. `listings`: the workspace's folder listings from earlier
    walks, reused for folders the kernel says are unchanged (folder_listings.py)."""
    found = SnapshotBuilder(workdir)
    walk = TreeWalk(workdir, max_entries, listings=listings)
    try:
        for entry in walk:
            found.add(walk, entry)
    except WalkError as exc:
        found.snapshot.incomplete = str(exc)
    found.snapshot.root = walk.root_stat
    return found.snapshot


class SnapshotBuilder:
    """A `Snapshot` filled entry by entry from a walk of the workspace (`snapshot`'s own, or another walk of the
    same tree that visits every entry: identity.give_tree's, so one walk serves both before a run)."""

    def __init__(self, workdir: str) -> None:
        self.snapshot = Snapshot()
        self._room = PATH_MAX - len(workdir) - 1

    def add(self, walk: TreeWalk, entry: Entry) -> None:
        found = self.snapshot
        found.entries += 1
        found.bytes += entry.st.st_blocks * 512
        if not stat.S_ISREG(entry.st.st_mode):
            return
        if walk.relpath_length(entry.name) >= self._room:
            found.too_deep += 1
            return
        found.files[walk.relpath(entry.name)] = (entry.st.st_size, entry.st.st_mtime_ns)


def diff(workdir: str, before: Snapshot, after: Snapshot) -> list[Artifact]:
    """Artifacts for files that are new or whose size or mtime changed."""
    out = []
    for rel, (size, mtime_ns) in sorted(after.files.items()):
        old = before.files.get(rel)
        if old == (size, mtime_ns):
            continue
        ext = os.path.splitext(rel)[1].lower()
        out.append(Artifact(path=rel, abs_path=os.path.join(workdir, rel),
                            kind="image" if ext in IMAGE_EXTENSIONS else "file",
                            size=size, mtime=mtime_ns / 1e9, created=old is None))
    return out
