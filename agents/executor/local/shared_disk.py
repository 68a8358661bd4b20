"""The workspace's file operations for a host whose worker writes the app's own folder (the local worker, and a
container that bind-mounts it): one implementation, so both list, read, write and hand over files alike."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import MutableMapping
from typing import Any

from .. import artifacts, identity
from ..backend import FILE_MAX_BYTES, FileInfo, SandboxSpec
from ..folder_listings import FolderListings
from ..tree_walk import remove_tree
from . import workspace_files

GIVE_TREE_ENTRIES = 50_000  # workspace entries handed to the sandbox's user at most (or twice max_disk_files)
#: How long the walk that ended one run stands for the workspace before the next (see `push_and_snapshot`).
REUSE_WALK_S = 1.0


class _LastWalk:
    """The latest complete walk of the workspace: when it started, and the top folder's stat then."""

    __slots__ = ("snapshot", "started", "top")

    def __init__(self, snapshot: artifacts.Snapshot, started: float, top: tuple[int, int, int]) -> None:
        self.snapshot, self.started, self.top = snapshot, started, top


def _top_stat(workdir: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(workdir, follow_symlinks=False)
    except OSError:
        return None
    return _top(st)


def _top(st: os.stat_result | None) -> tuple[int, int, int] | None:
    return None if st is None else (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


class SharedDiskFiles:
    """Mixin for a `SandboxHost` with `Capabilities.same_disk`: `workdir` is the folder the worker writes,
    `_uid` the sandbox's own user id (None when the app is not root), `spec` its spec."""

    id: str
    workdir: str
    tmpdir: str
    _private: str
    _uid: int | None
    spec: SandboxSpec
    _last_walk: _LastWalk | None = None  # see `push_and_snapshot`
    _listings: FolderListings | None = None  # the workspace's folder listings, kept between walks

    def _release_host_side(self, live: MutableMapping[str, Any], live_lock: threading.Lock) -> None:
        """What a host of this machine leaves when its worker is gone: the temp folder (any depth: the code may
        have made a tree too deep for shutil.rmtree), the app-private folder, the user id, the live entry."""
        remove_tree(self.tmpdir)
        shutil.rmtree(self._private, ignore_errors=True)
        identity.release(self._uid)
        self._uid = None
        with live_lock:
            live.pop(self.id, None)

    def snapshot(self) -> artifacts.Snapshot:
        started = time.monotonic()
        if self._listings is None:
            self._listings = FolderListings()
        found = artifacts.snapshot(self.workdir, listings=self._listings)
        # The top folder's stat as the walk opened it (its first step; no `lstat` of its own): a change after that
        # shows as a different stat to the next step's check (`push_and_snapshot`), as one after an `lstat` did.
        self._remember_walk(found, started, _top(found.root))
        return found

    def _remember_walk(self, found: artifacts.Snapshot, started: float, top: tuple[int, int, int] | None) -> None:
        """Keep the latest-started complete walk (a listing for the page that began earlier and ended later
        must not replace the walk that ended a run)."""
        last = self._last_walk
        if last is None or started > last.started:
            complete = found.incomplete is None and top is not None
            self._last_walk = _LastWalk(found, started, top) if complete and top is not None else None

    def _forget_walk(self) -> None:
        self._last_walk = None

    def list_files(self) -> dict[str, FileInfo]:
        return {rel: FileInfo(size, mtime) for rel, (size, mtime) in self.snapshot().files.items()}

    def get_file(self, relpath: str, max_bytes: int = FILE_MAX_BYTES) -> bytes:
        return workspace_files.read(self.workdir, relpath, max_bytes)

    def put_file(self, relpath: str, data: bytes, max_bytes: int = FILE_MAX_BYTES, exclusive: bool = False) -> None:
        self._forget_walk()
        try:
            workspace_files.write(self.workdir, relpath, data, max_bytes, self._uid, exclusive=exclusive)
        finally:
            self._forget_walk()  # a walk that began meanwhile may have seen half of it

    def remove_file(self, relpath: str) -> None:
        self._forget_walk()
        try:
            workspace_files.remove(self.workdir, relpath)
        finally:
            self._forget_walk()

    def push_workspace(self) -> str | None:
        """Files the app put in the workspace (uploads) become the sandbox user's, so its code can change them;
        returns why some could not (a tree past the entry cap), for the run's output."""
        if self._uid is None or not self.workdir:
            return None
        entries = max(GIVE_TREE_ENTRIES, 2 * self.spec.limits.max_disk_files)
        return identity.give_tree(self.workdir, self._uid, max_entries=entries)

    def push_and_snapshot(self) -> tuple[str | None, artifacts.Snapshot]:
        """One walk hands the workspace over and lists it, when it finished within the snapshot's entry cap
        (otherwise the snapshot walks on its own, so it says what a walk of its own says).

        Back-to-back steps skip the walk: the walk that ended the last run (the worker frozen since, so its code
        changed nothing) stands for the workspace when it is under `REUSE_WALK_S` old, the app's own file
        operations changed nothing since (`put_file`/`remove_file` forget it) and the top folder's stat is the
        same (a file dropped there by other means). What it does not see, for at most that second: a file
        changed in place, or added in a subfolder, by something other than the file operations; it shows as
        the next step's file and is handed to the sandbox's user at the next full walk. A step after a model's
        reply (seconds) always walks. Only listings and counts are skipped: the disk limits are checked on the
        walk after every run."""
        last = self._last_walk
        if (last is not None and time.monotonic() - last.started < REUSE_WALK_S
                and _top_stat(self.workdir) == last.top):
            return None, last.snapshot
        if self._uid is None or not self.workdir:
            return self.push_workspace(), self.snapshot()
        started, top = time.monotonic(), _top_stat(self.workdir)
        entries = max(GIVE_TREE_ENTRIES, 2 * self.spec.limits.max_disk_files)
        found = artifacts.SnapshotBuilder(self.workdir)
        why = identity.give_tree(self.workdir, self._uid, max_entries=entries, on_entry=found.add)
        if why is not None or found.snapshot.entries > artifacts.MAX_ENTRIES:
            return why, self.snapshot()
        self._remember_walk(found.snapshot, started, top)
        return None, found.snapshot

    def pull_workspace(self) -> None:
        """Nothing to copy: the worker writes the app's folder itself."""
