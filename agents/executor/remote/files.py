"""The workspace of a remote sandbox: moved by the service's file API, checked by the app, mirrored locally.

Why a mirror: `PythonSandbox` reports a run's files with an `abs_path` on the app's machine and the app keeps a
chat's files in `WorkspaceSpec.path`; a remote worker writes its own disk. So before each run files the app
put in that folder (uploads, a restored chat) are uploaded, and after each run the files the run changed are
downloaded into it (`pull_workspace`), each within `max_file_size_mb` and all within `max_disk_mb`. The lists and
the files come from the service, so they are hostile: every path is re-checked (relative, no `..`, plain form, bounded),
every size and count bounded, and local writes go through `local/workspace_files.py` (never through a link).
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext

from .. import artifacts
from ..artifacts import Snapshot
from ..backend import FILE_MAX_BYTES, FileInfo, FileTooLarge, SandboxSpec
from ..errors import SandboxError
from ..local import workspace_files
from .interface import RemoteFiles

MAX_LIST = artifacts.MAX_ENTRIES


class RemoteWorkspace:
    """Mixin for `SupervisedHost`: the `SandboxHost` file operations over `RemoteFiles`."""

    spec: SandboxSpec

    def _init_files(self, files: RemoteFiles) -> None:
        self._files = files
        self._local = ""  # the app's copy of the workspace (WorkspaceSpec.path), once assigned
        self._local_seen: dict[str, tuple[int, int]] = {}  # local files as last synced (size, mtime_ns)
        self._remote_seen: dict[str, tuple[int, int]] = {}  # remote files as last downloaded

    def _workspace_assigned(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)
        self._local = os.path.realpath(path)
        self.push_workspace()

    def _worker_still(self) -> AbstractContextManager[None]:
        """Held around each file operation: the host's override keeps the worker from running meanwhile (a
        service's file API may check a path in one request and follow it in the next: E2B's follows links)."""
        return nullcontext()

    # --- one file --------------------------------------------------------------------------------------------
    def list_files(self) -> dict[str, FileInfo]:
        listing = self._files.list(MAX_LIST)
        if not isinstance(listing, dict) or len(listing) > MAX_LIST:
            raise OverflowError(f"the sandbox service listed more than {MAX_LIST:,} files")
        out: dict[str, FileInfo] = {}
        for rel, info in listing.items():
            if not (isinstance(rel, str) and len(rel) < artifacts.PATH_MAX and workspace_files.is_plain(rel)
                    and isinstance(info, FileInfo) and isinstance(info.size, int) and isinstance(info.mtime_ns, int)
                    and info.size >= 0):
                raise ValueError(f"the sandbox service listed an invalid entry {str(rel)[:80]!r}")
            out[rel] = info
        return out

    def get_file(self, relpath: str, max_bytes: int = FILE_MAX_BYTES) -> bytes:
        workspace_files.check_relpath(relpath)
        with self._worker_still():
            data = self._files.get(relpath, max_bytes)
        if not isinstance(data, bytes):
            raise TypeError("the sandbox service returned a file that is not bytes")
        if len(data) > max_bytes:
            raise FileTooLarge(f"{relpath!r} is over the cap of {max_bytes:,} bytes")
        return data

    def put_file(self, relpath: str, data: bytes, max_bytes: int = FILE_MAX_BYTES, exclusive: bool = False) -> None:
        workspace_files.check_relpath(relpath)
        if len(data) > max_bytes:
            raise FileTooLarge(f"{len(data):,} bytes for {relpath!r}, over the cap of {max_bytes:,}")
        # The service's API has no create-only write: the look and the write are two requests (a file the code
        # makes in between is replaced; the code can only race its own session's upload).
        with self._worker_still():
            if exclusive and relpath in self.list_files():
                raise FileExistsError(f"{relpath!r} already exists in the workspace")
            self._files.put(relpath, bytes(data), max_bytes)

    def remove_file(self, relpath: str) -> None:
        workspace_files.check_relpath(relpath)
        with self._worker_still():
            self._files.remove(relpath)
        self._remote_seen.pop(relpath, None)

    # --- the workspace around a run -----------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        found = Snapshot()
        try:
            listing = self.list_files()
        except (OverflowError, ValueError, OSError) as exc:
            found.incomplete = f"the sandbox service could not list them ({str(exc)[:200]})"
            return found
        found.files = {rel: (info.size, info.mtime_ns) for rel, info in listing.items()}
        found.entries = len(listing)
        found.bytes = sum(info.size for info in listing.values())
        return found

    def push_workspace(self) -> str | None:
        """Files of the app's copy that changed since the last sync are uploaded (a restored chat: all of them)."""
        if not self._local:
            return None
        cap = int(self.spec.limits.max_file_size_mb) * 1024 * 1024
        local = artifacts.snapshot(self._local)
        problems: list[str] = []
        for rel, state in sorted(local.files.items()):
            if self._local_seen.get(rel) == state:
                continue
            try:
                self._files.put(rel, workspace_files.read(self._local, rel, cap), cap)
                self._local_seen[rel] = state
            except (OSError, ValueError) as exc:
                problems.append(f"{rel}: {type(exc).__name__}")
        if local.incomplete:
            problems.append(local.incomplete)
        return f"some files could not be copied into the sandbox ({'; '.join(problems)[:300]})" if problems else None

    def push_and_snapshot(self) -> tuple[str | None, Snapshot]:
        return self.push_workspace(), self.snapshot()

    def pull_workspace(self) -> None:
        """Files the run made or changed are downloaded into the app's copy (each within `max_file_size_mb`, the
        whole copy within `max_disk_mb`); files the code deleted are deleted there first. A file over a cap stays
        remote only. The budget is the copy's, not one run's: the sandbox counts blocks, so its code can list
        files that cost it nothing (sparse, hard links) at full size, a few new ones each run."""
        if not self._local:
            return
        remote = self.snapshot()
        if remote.incomplete:
            return
        for rel in [r for r in self._remote_seen if r not in remote.files]:
            self._remote_seen.pop(rel, None)
            self._local_seen.pop(rel, None)
            try:
                workspace_files.remove(self._local, rel)
            except OSError:
                pass
        local = artifacts.snapshot(self._local)
        if local.incomplete:
            return  # the copy cannot be counted: nothing is added to it
        cap = int(self.spec.limits.max_file_size_mb) * 1024 * 1024
        budget = int(self.spec.limits.max_disk_mb) * 1024 * 1024 - sum(size for size, _ in local.files.values())
        for rel, state in sorted(remote.files.items()):
            if self._remote_seen.get(rel) == state:
                continue
            replaced = local.files.get(rel, (0, 0))[0]  # the copy's older version of it, freed by the download
            allowed = min(cap, budget + replaced)
            if state[0] > allowed:
                continue
            try:
                data = self.get_file(rel, allowed)
                workspace_files.write(self._local, rel, data, cap, None)
                st = os.stat(os.path.join(self._local, rel), follow_symlinks=False)
            except (OSError, ValueError, SandboxError):
                continue  # one file's failed transfer (an exec that broke): tried again after the next run
            budget -= st.st_size - replaced
            self._remote_seen[rel] = state
            self._local_seen[rel] = (st.st_size, st.st_mtime_ns)
