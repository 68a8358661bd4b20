"""The one way `ui/` reaches a session's workspace files: `WorkspaceFiles`, whatever runs the sandbox.

Why: the workspace is the sandbox's; on the local worker (and a container that bind-mounts it) the app's folder is
the very folder the code writes (`Capabilities.same_disk`), but a backend without it (a remote pod) keeps the
files elsewhere, and the app's folder is only a copy refreshed after each run. So the UI lists, reads, writes and
deletes through this interface: `DiskFiles` for the same-disk case (the link-safe descriptor helpers of
agents/executor/local/workspace_files.py), `HostFiles` for any other host (its `list_files`/`get_file`/
`put_file`/`remove_file`). `files_of(host, root)` picks one; with no sandbox yet, the folder is the truth.

Errors (the same for both): `PermissionError` for a name out of the workspace, a link at any depth, a folder or
a special file; `FileNotFoundError`; `FileExistsError` for an exclusive write (decided where the file is made:
the host's `put_file(exclusive=True)`); `FileTooLarge` past a cap. Who uses it: the uploads (`write` exclusive,
`taken`, `used_bytes`), the published copies (`open_versioned`: the chat's images and links, the files panel),
the model's pictures, a reopened or rewound chat (`list`), the exports and zips, the MCP files, tools of the app
(`speech_to_text`). `relative_name` maps a path the chat names to a workspace name by its text alone.
tests/ui/test_workspace_access_scan.py keeps every other module that reaches files by path to the folders it
names (none a session's workspace files); tests/ui/test_workspace_elsewhere.py runs a chat on a host elsewhere.
"""
from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from agents.executor.artifacts import PATH_MAX
from agents.executor.backend import FILE_MAX_BYTES, FileInfo, FileTooLarge
from agents.executor.local import workspace_files as by_descriptor
from agents.executor.local.worker_watch import usage
from agents.executor.tree_walk import TreeWalk, WalkError

#: Entries looked at by a listing, at most: past that it shows what was found (the disk limit counts them all).
MAX_WALKED = 20_000


class WorkspaceFiles(Protocol):
    """A session's workspace files by relative POSIX name; `root` is the app's folder of them (names shown to
    people are relative to it). Never follows a link; every read and write has a cap."""

    root: Path

    def list(self) -> dict[str, FileInfo]:
        """Regular files, hidden names (a part starting with '.') left out, bounded by `MAX_WALKED` entries."""
        ...

    def stat(self, relpath: str) -> FileInfo: ...

    def read(self, relpath: str, max_bytes: int = FILE_MAX_BYTES) -> bytes: ...

    def open(self, relpath: str, max_bytes: int = FILE_MAX_BYTES) -> tuple[BinaryIO, int]:
        """A stream of the file and its size when opened (`FileTooLarge` if over `max_bytes`); caller closes."""
        ...

    def write(self, relpath: str, data: bytes | BinaryIO, max_bytes: int = FILE_MAX_BYTES,
              exclusive: bool = False) -> None:
        """Replace or create the file whole; `exclusive`: `FileExistsError` if the name is taken."""
        ...

    def remove(self, relpath: str) -> None: ...

    def open_versioned(self, relpath: str, max_bytes: int = FILE_MAX_BYTES) -> tuple[BinaryIO, FileInfo]:
        """`open`, with the size and modification time of what was opened (`mtime_ns` 0: unknown, so a copy
        keyed by it is never reused); for the published copies (ui/chat/published_files.py)."""
        ...

    def taken(self, relpath: str) -> bool:
        """Whether anything (a file, a folder, a link) has this name: an upload picks another."""
        ...

    def used_bytes(self) -> int:
        """What the workspace takes, as the sandbox's disk limit counts it (an unfinished count is "full")."""
        ...


def root_forms(root: str | Path) -> tuple[str, ...]:
    """The workspace folder as the app names it and as it really is (an absolute name the code prints may be
    either), both absolute; only names are compared with these, no file is reached through them."""
    given = os.path.abspath(root)
    real = os.path.realpath(given)
    return (given,) if real == given else (given, real)


def relative_name(path: str | Path, root: str | Path) -> str | None:
    """`path` (absolute, or relative to the workspace) as a name inside the workspace `root`, or None if it is
    not inside (no file is looked at)."""
    text = os.fspath(path)
    for base in root_forms(root):
        full = os.path.normpath(text if os.path.isabs(text) else os.path.join(base, text))
        if os.path.commonpath([full, base]) == base and full != base:
            return os.path.relpath(full, base).replace(os.sep, "/")
    return None


def plain_name(relpath: str) -> bool:
    """A name from outside (a remote listing, a shared store's manifest) in its one plain form: inside the
    workspace, no backslash, no `.` or empty step (agents/executor/local/workspace_files.py `is_plain`)."""
    return by_descriptor.is_plain(relpath)


def _hidden(relpath: str) -> bool:
    return any(part.startswith(".") for part in relpath.split("/"))


class DiskFiles:
    """The workspace is the app's own folder (same disk, or no sandbox yet): read by descriptor, links refused."""

    def __init__(self, root: str | Path, uid: int | None = None) -> None:
        self.root = Path(root)
        self._uid = uid

    def list(self) -> dict[str, FileInfo]:
        found: dict[str, FileInfo] = {}
        room = PATH_MAX - len(str(self.root)) - 1
        walk = TreeWalk(str(self.root), MAX_WALKED)
        try:
            for entry in walk:
                if entry.name.startswith("."):
                    walk.skip()  # a hidden folder (a cache of thousands of files) is not walked at all
                elif stat.S_ISREG(entry.st.st_mode) and walk.relpath_length(entry.name) < room:
                    found[walk.relpath(entry.name)] = FileInfo(entry.st.st_size, entry.st.st_mtime_ns)
        except WalkError:
            pass  # a listing, not a limit: what was found is shown (the disk limit fails closed on its own walk)
        return found

    def stat(self, relpath: str) -> FileInfo:
        fd = by_descriptor.open_regular(str(self.root), relpath)
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
        return FileInfo(st.st_size, st.st_mtime_ns)

    def read(self, relpath: str, max_bytes: int = FILE_MAX_BYTES) -> bytes:
        return by_descriptor.read(str(self.root), relpath, max_bytes)

    def open(self, relpath: str, max_bytes: int = FILE_MAX_BYTES) -> tuple[BinaryIO, int]:
        stream, info = self.open_versioned(relpath, max_bytes)
        return stream, info.size

    def open_versioned(self, relpath: str, max_bytes: int = FILE_MAX_BYTES) -> tuple[BinaryIO, FileInfo]:
        fd = by_descriptor.open_regular(str(self.root), relpath)
        try:
            st = os.fstat(fd)
            if st.st_size > max_bytes:
                raise FileTooLarge(f"{relpath!r} is {st.st_size:,} bytes, over the cap of {max_bytes:,}")
        except BaseException:
            os.close(fd)
            raise
        return os.fdopen(fd, "rb"), FileInfo(st.st_size, st.st_mtime_ns)

    def taken(self, relpath: str) -> bool:
        by_descriptor.check_relpath(relpath)
        return os.path.lexists(self.root / relpath)

    def used_bytes(self) -> int:
        use = usage([str(self.root)])
        return use.bytes if use.complete else 1 << 62

    def write(self, relpath: str, data: bytes | BinaryIO, max_bytes: int = FILE_MAX_BYTES,
              exclusive: bool = False) -> None:
        os.makedirs(self.root, exist_ok=True)  # the app's own folder (a session's is made with it; a test's not)
        by_descriptor.write(str(self.root), relpath, data, max_bytes, self._uid, exclusive=exclusive)

    def remove(self, relpath: str) -> None:
        by_descriptor.remove(str(self.root), relpath)


class HostFiles:
    """The workspace as a sandbox host without `same_disk` keeps it: every operation is the host's own (its
    answers are the sandbox's, so sizes are re-checked here)."""

    def __init__(self, host: Any, root: str | Path) -> None:
        self._host = host
        self.root = Path(root)

    def list(self) -> dict[str, FileInfo]:
        listed = self._host.list_files()
        return {name: info for name, info in list(listed.items())[:MAX_WALKED]
                if isinstance(name, str) and not _hidden(name) and by_descriptor.is_inside(name)}

    def stat(self, relpath: str) -> FileInfo:
        by_descriptor.check_relpath(relpath)
        info = self._host.list_files().get(relpath)
        if info is None:
            raise FileNotFoundError(f"{relpath!r} is not in the workspace")
        return info

    def read(self, relpath: str, max_bytes: int = FILE_MAX_BYTES) -> bytes:
        data = self._host.get_file(relpath, max_bytes)
        if len(data) > max_bytes:  # the host's word is not taken for it
            raise FileTooLarge(f"{relpath!r} is over the cap of {max_bytes:,} bytes")
        return bytes(data)

    def open(self, relpath: str, max_bytes: int = FILE_MAX_BYTES) -> tuple[BinaryIO, int]:
        data = self.read(relpath, max_bytes)
        return io.BytesIO(data), len(data)

    def open_versioned(self, relpath: str, max_bytes: int = FILE_MAX_BYTES) -> tuple[BinaryIO, FileInfo]:
        stream, size = self.open(relpath, max_bytes)
        return stream, FileInfo(size, 0)  # the content came whole: nothing says it is the version seen before

    def taken(self, relpath: str) -> bool:
        by_descriptor.check_relpath(relpath)
        return relpath in self._host.list_files()  # regular files only: a link there fails the exclusive write

    def used_bytes(self) -> int:
        seen = self._host.snapshot()  # the host's walk, hidden files too; one it could not finish counts as full
        if seen.incomplete or seen.too_deep:
            return 1 << 62
        return sum(max(0, int(size)) for size, _ in seen.files.values())

    def write(self, relpath: str, data: bytes | BinaryIO, max_bytes: int = FILE_MAX_BYTES,
              exclusive: bool = False) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            data = data.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise FileTooLarge(f"{len(data):,} bytes for {relpath!r}, over the cap of {max_bytes:,}")
        self._host.put_file(relpath, bytes(data), max_bytes, exclusive=exclusive)  # the host decides, where it is

    def remove(self, relpath: str) -> None:
        self._host.remove_file(relpath)


def files_of(host: Any, root: str | Path) -> WorkspaceFiles:
    """The files of a session whose sandbox host is `host` (None: no sandbox yet, the folder is the truth)."""
    if host is None or getattr(getattr(host, "capabilities", None), "same_disk", False):
        return DiskFiles(root, getattr(host, "_uid", None))
    return HostFiles(host, root)
