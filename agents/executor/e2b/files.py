"""The workspace's files in an E2B sandbox, through the service's file API, with size caps.

Why checks of our own: the file API acts as the sandbox's user and follows links, and what it returns comes from a
machine the sandbox's code controls. So every path is checked to stay inside the workspace before it is sent,
a file is read only after the service says it is a regular file (no link), a read stops at the cap whatever the
file's stated size, and listings are bounded in number. The code cannot swap a file for a link between the
check and the read while it is frozen: the supervisor stops it between steps, and the host stops it for each
file operation made during a step (a tool the code called, a tab reading the files: `SupervisedHost._worker_still`).
"""

from __future__ import annotations

import posixpath
from typing import Any

from ..artifacts import MAX_ENTRIES
from ..backend import FILE_MAX_BYTES, FileInfo, FileTooLarge
from .errors import describe

LIST_DEPTH = 32  # how deep a listing reaches (a path deeper than this is not listed)


def check_relpath(relpath: str) -> str:
    """`relpath` normalised, or `PermissionError` if it is empty, absolute or leaves the workspace."""
    if not isinstance(relpath, str) or not relpath or "\x00" in relpath:
        raise PermissionError(f"not a workspace path: {relpath!r}")
    norm = posixpath.normpath(relpath)
    if norm.startswith("/") or norm == "." or norm == ".." or norm.startswith("../"):
        raise PermissionError(f"path leaves the workspace: {relpath!r}")
    return norm


class E2BFiles:
    """The workspace folder `root` of one E2B sandbox (`sandbox` is the SDK's `Sandbox`): the remote package's
    `RemoteFiles` (`put`, `get`, `list`, `remove`). Files are written as E2B's default user, `user` (uid 1000 in
    E2B's templates, the sandbox image's worker uid), so the worker may change them."""

    def __init__(self, sandbox: Any, root: str, hint: str = "") -> None:
        self._sandbox = sandbox
        self.root = root.rstrip("/")
        self._hint = hint

    def _abs(self, relpath: str) -> str:
        return f"{self.root}/{check_relpath(relpath)}"

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from e2b.exceptions import FileNotFoundException, NotFoundException

        try:
            return fn(*args, **kwargs)
        except FileNotFoundException as exc:
            raise FileNotFoundError(f"{what}: no such file") from exc
        except NotFoundException as exc:
            if "sandbox" in str(exc).lower():
                raise OSError(describe(exc, self._hint)) from exc
            raise FileNotFoundError(f"{what}: no such file") from exc
        except Exception as exc:
            raise OSError(describe(exc, f"{self._hint}{what}: ")) from exc

    def _regular(self, relpath: str) -> Any:
        """The service's entry for `relpath`, refused unless it is a regular file reached without a link."""
        from e2b.sandbox.filesystem.filesystem import FileType

        self._no_linked_folder(relpath)
        info = self._call(relpath, self._sandbox.files.get_info, self._abs(relpath))
        if info.symlink_target is not None or info.type != FileType.FILE:
            raise PermissionError(f"not a regular file of the workspace: {relpath!r}")
        return info

    def _no_linked_folder(self, relpath: str) -> None:
        """Refuse a path whose folders (below the workspace) include a link: the API would follow it."""
        parts = check_relpath(relpath).split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth])
            if not self._call(folder, self._sandbox.files.exists, self._abs(folder)):
                return  # a folder that does not exist yet is made by the service, not followed
            info = self._call(folder, self._sandbox.files.get_info, self._abs(folder))
            if info.symlink_target is not None:
                raise PermissionError(f"{relpath!r} is reached through a link ({folder})")

    def list(self, max_entries: int = MAX_ENTRIES) -> dict[str, FileInfo]:
        """Regular files under the workspace (links skipped); `OverflowError` past `max_entries`."""
        from e2b.sandbox.filesystem.filesystem import FileType

        entries = self._call("the workspace", self._sandbox.files.list, self.root, depth=LIST_DEPTH)
        found: dict[str, FileInfo] = {}
        for entry in entries:
            if entry.type != FileType.FILE or entry.symlink_target is not None:
                continue
            path = posixpath.normpath(str(entry.path))
            if not path.startswith(self.root + "/"):
                continue  # the service listed something outside the folder it was asked for
            found[path[len(self.root) + 1:]] = FileInfo(size=max(0, int(entry.size)),
                                                        mtime_ns=int(entry.modified_time.timestamp() * 1e9))
            if len(found) > max_entries:
                raise OverflowError(f"the workspace has more than {max_entries} files")
        return found

    def get(self, relpath: str, max_bytes: int = FILE_MAX_BYTES) -> bytes:
        """A regular file's bytes; `FileTooLarge` past `max_bytes` (stated or actually sent), nothing kept."""
        info = self._regular(relpath)
        if info.size > max_bytes:
            raise FileTooLarge(f"{relpath} is {info.size} bytes, over the cap of {max_bytes}")
        reader = self._call(relpath, self._sandbox.files.read, self._abs(relpath), format="stream")
        data = bytearray()
        try:
            for chunk in reader:
                data += chunk
                if len(data) > max_bytes:
                    raise FileTooLarge(f"{relpath} is over the cap of {max_bytes} bytes")
        finally:
            reader.close()
        return bytes(data)

    def put(self, relpath: str, data: bytes, max_bytes: int = FILE_MAX_BYTES, exclusive: bool = False) -> None:
        """Write `data` as the file `relpath` (folders made by the service). `exclusive`: refuse an existing name;
        a name that exists as anything but a regular file is always refused."""
        if len(data) > max_bytes:
            raise FileTooLarge(f"{relpath} would be {len(data)} bytes, over the cap of {max_bytes}")
        path = self._abs(relpath)
        self._no_linked_folder(relpath)
        if self._call(relpath, self._sandbox.files.exists, path):
            if exclusive:
                raise FileExistsError(f"{relpath} exists in the workspace")
            self._regular(relpath)
        self._call(relpath, self._sandbox.files.write, path, bytes(data))

    def remove(self, relpath: str) -> None:
        """Delete a regular file of the workspace (never a folder, never what a link points to)."""
        self._regular(relpath)
        self._call(relpath, self._sandbox.files.remove, self._abs(relpath))
