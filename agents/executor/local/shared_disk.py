"""The workspace's file operations for a host whose worker writes the app's own folder (the local worker, and a
container that bind-mounts it): one implementation, so both list, read, write and hand over files alike."""

from __future__ import annotations

import shutil
import threading
from collections.abc import MutableMapping
from typing import Any

from .. import artifacts, identity
from ..backend import FILE_MAX_BYTES, FileInfo, SandboxSpec
from ..tree_walk import remove_tree
from . import workspace_files

GIVE_TREE_ENTRIES = 50_000  # workspace entries handed to the sandbox's user at most (or twice max_disk_files)


class SharedDiskFiles:
    """Mixin for a `SandboxHost` with `Capabilities.same_disk`: `workdir` is the folder the worker writes,
    `_uid` the sandbox's own user id (None when the app is not root), `spec` its spec."""

    id: str
    workdir: str
    tmpdir: str
    _private: str
    _uid: int | None
    spec: SandboxSpec

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
        return artifacts.snapshot(self.workdir)

    def list_files(self) -> dict[str, FileInfo]:
        return {rel: FileInfo(size, mtime) for rel, (size, mtime) in self.snapshot().files.items()}

    def get_file(self, relpath: str, max_bytes: int = FILE_MAX_BYTES) -> bytes:
        return workspace_files.read(self.workdir, relpath, max_bytes)

    def put_file(self, relpath: str, data: bytes, max_bytes: int = FILE_MAX_BYTES, exclusive: bool = False) -> None:
        workspace_files.write(self.workdir, relpath, data, max_bytes, self._uid, exclusive=exclusive)

    def remove_file(self, relpath: str) -> None:
        workspace_files.remove(self.workdir, relpath)

    def push_workspace(self) -> str | None:
        """Files the app put in the workspace (uploads) become the sandbox user's, so its code can change them;
        returns why some could not (a tree past the entry cap), for the run's output."""
        if self._uid is None or not self.workdir:
            return None
        entries = max(GIVE_TREE_ENTRIES, 2 * self.spec.limits.max_disk_files)
        return identity.give_tree(self.workdir, self._uid, max_entries=entries)

    def push_and_snapshot(self) -> tuple[str | None, artifacts.Snapshot]:
        """One walk hands the workspace over and lists it, when it finished within the snapshot's entry cap
        (otherwise the snapshot walks on its own, so it says what a walk of its own says)."""
        if self._uid is None or not self.workdir:
            return self.push_workspace(), self.snapshot()
        entries = max(GIVE_TREE_ENTRIES, 2 * self.spec.limits.max_disk_files)
        found = artifacts.SnapshotBuilder(self.workdir)
        why = identity.give_tree(self.workdir, self._uid, max_entries=entries, on_entry=found.add)
        if why is not None or found.snapshot.entries > artifacts.MAX_ENTRIES:
            return why, self.snapshot()
        return None, found.snapshot

    def pull_workspace(self) -> None:
        """Nothing to copy: the worker writes the app's folder itself."""
