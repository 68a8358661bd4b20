"""Files the browser shows or downloads (uploads, charts, the agent's outputs, exports): published once into
the folder Gradio serves, and handed to the browser with their URL.

Why not hand Gradio the workspace paths: Gradio checks and re-hashes every file of an output on every update
of a streaming event, on the one event loop all sessions share: 0.4 ms per file per update here, so a chat
with ten charts cost each of its updates 4 ms, and 16 analysts' sessions queued behind each other. A file
whose URL is already absolute is passed through untouched. So each version of a file is copied once, by the
session's own thread, into Gradio's upload folder under a per-session random folder and the content's hash
(the URL changes when the content does, and cannot be guessed), and the streamed updates carry its URL.

It is also the one way files leave a session: only regular files inside the session's own folder are
published (no symbolic links: code in the sandbox could point one at /etc), the workspaces themselves are
not served; a workspace file is read through the session's `WorkspaceFiles` (ui/session/workspace_access.py:
on the sandbox's own disk or through its host's file operations), a file of the session's folder outside the
workspace (an export) by descriptor here; and Gradio serves published files inline only for types that cannot
run script (others download).
"""
from __future__ import annotations

import errno
import functools
import hashlib
import os
import secrets
import shutil
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from agents.executor.backend import FileTooLarge
from ui.session.workspace_access import WorkspaceFiles
from ui.web.gradio_compat import file_url, upload_folder

CHUNK = 1 << 20
#: How a file the worker controls is opened: never through a link at its end, and without waiting: a FIFO
#: opened for reading blocks until a writer comes, so one left in the workspace held an app thread forever (the
#: file is then refused as not regular; O_NONBLOCK changes nothing for a regular file's reads).
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class NotPublishable(ValueError):
    """The file cannot be shown: missing, not a regular file, or outside the session's folder."""


@functools.cache
def publish_root() -> Path:
    """Where every session's published files live: a folder of Gradio's upload folder (which it serves).
    Worked out once: finding it takes system calls, and a thread that makes one on the streaming path gives
    up the interpreter lock and may wait for it behind every other session's thread."""
    return upload_folder() / "agentdeck"


def max_published_bytes() -> int:
    """What one session's published copies may take (AGENTDECK_MAX_PUBLISHED_MB, 2048). Why: every version of a
    file is copied (a chart redrawn each step), outside the sandbox's own disk limit, into a folder all sessions
    share; code rewriting big files step after step would otherwise fill it."""
    from ui.config.current import current_settings

    return int(current_settings().max_published_mb * (1 << 20))


@dataclass(frozen=True)
class Published:
    """A published copy: its path (what the browser is given) and the SHA-256 of its content."""
    path: str
    digest: str


class FilePublisher:
    """One session's published files: a copy per (file, size, mtime) under <publish root>/<random>/<sha256>/name.

    Few system calls per file, because each one on the streaming path gives up the interpreter lock: the
    file is opened once without following a final symbolic link, checked through its descriptor (regular
    file; where it really is, read back from /proc), and copied while hashing.
    """

    def __init__(self, root: Path | None = None, max_bytes: int | None = None) -> None:
        self.folder = (root or publish_root()) / secrets.token_hex(16)
        self.max_bytes = max_published_bytes() if max_bytes is None else max_bytes
        self._bytes = 0  # what this session's copies take
        self._copies: dict[tuple[str, int, int], Published] = {}
        self._real_folders: dict[str, str] = {}
        self._lock = threading.Lock()

    @property
    def bytes(self) -> int:
        """What this session's copies take now."""
        return self._bytes

    def publish(self, source: str | Path, inside: str | Path) -> Published:
        """The published copy of `source` as it is now; it must be a regular file under the folder `inside`."""
        name = os.path.basename(source)
        try:
            fd = os.open(source, READ_FLAGS)
        except OSError as exc:
            why = "is a symbolic link" if exc.errno == errno.ELOOP else f"cannot be read: {exc.strerror}"
            raise NotPublishable(f"{name} {why}") from exc
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise NotPublishable(f"{name} is not a regular file")
            real = _real_path_of(fd, source)
            real_inside = self._real_folder(str(inside))
            if os.path.commonpath([real, real_inside]) != real_inside:
                raise NotPublishable(f"{name} is outside this session's folder")
            key = (real, info.st_size, info.st_mtime_ns)
            with self._lock:
                known = self._copies.get(key)
                if known is None:
                    if self._bytes + info.st_size > self.max_bytes:
                        raise NotPublishable(self._over_budget(name))
                    with os.fdopen(os.dup(fd), "rb") as stream:
                        known, _ = self._copy(stream, name, info.st_size)
                        self._copies[key] = known
                    self._bytes += info.st_size
                return known
        finally:
            os.close(fd)

    def publish_workspace_file(self, files: WorkspaceFiles, relpath: str) -> Published:
        """The published copy of the workspace file `relpath` as it is now, read through `files` (whatever runs
        the sandbox: ui/session/workspace_access.py refuses links at any depth, folders and special files, and
        reads no more than this session may still publish)."""
        name = os.path.basename(relpath)
        with self._lock:
            room = self.max_bytes - self._bytes
        try:
            stream, info = files.open_versioned(relpath, max(0, room))
        except FileTooLarge:
            raise NotPublishable(self._over_budget(name)) from None
        except PermissionError as exc:
            raise NotPublishable(f"{name} is not a regular file of the workspace ({exc})") from None
        except OSError as exc:
            raise NotPublishable(f"{name} cannot be read: {exc.strerror or exc}") from exc
        with stream:
            key = ("workspace:" + relpath, info.size, info.mtime_ns)
            with self._lock:
                known = self._copies.get(key) if info.mtime_ns else None
                if known is None:
                    if self._bytes + info.size > self.max_bytes:
                        raise NotPublishable(self._over_budget(name))
                    known, new = self._copy(stream, name, info.size)
                    if info.mtime_ns:
                        self._copies[key] = known
                    if new:  # content read again (no version to key it by) but already published: no more room
                        self._bytes += info.size
                return known

    def _over_budget(self, name: str) -> str:
        return (f"{name} is past the {self.max_bytes >> 20} MB of files this chat may show (each version of a file "
                "is kept; the file is in the workspace, and a new chat has room again)")

    def _real_folder(self, folder: str) -> str:
        real = self._real_folders.get(folder)
        if real is None:
            real = self._real_folders[folder] = os.path.realpath(folder)
        return real

    def _copy(self, stream: BinaryIO, name: str, size: int) -> tuple[Published, bool]:
        """Copy the open file's first `size` bytes (its size when checked: one the code keeps growing is not
        followed past what was counted) into the content-addressed folder, hashing while copying; and whether
        it is a new copy (False: the same content under the same name was published already)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        staging = self.folder / f".incoming-{secrets.token_hex(8)}"
        digest = hashlib.sha256()
        left = size
        try:
            with open(staging, "wb") as writer:
                while left > 0 and (chunk := stream.read(min(CHUNK, left))):
                    left -= len(chunk)
                    digest.update(chunk)
                    writer.write(chunk)
            target_dir = self.folder / digest.hexdigest()[:32]
            target_dir.mkdir(exist_ok=True)
            target = target_dir / name
            new = not os.path.lexists(target)
            os.replace(staging, target)
        except OSError as exc:
            staging.unlink(missing_ok=True)
            raise NotPublishable(f"{name} could not be published: {exc.strerror}") from exc
        return Published(str(target), digest.hexdigest()), new

    def remove(self) -> None:
        """Delete every published copy (the session was reset or closed); later publishes start afresh."""
        with self._lock:
            self._copies.clear()
            self._bytes = 0
            shutil.rmtree(self.folder, ignore_errors=True)


def _real_path_of(fd: int, fallback: str | Path) -> str:
    """Where an open file really is: read from its descriptor (no race with a path swapped meanwhile)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # no /proc (not Linux): resolve the path instead
        return os.path.realpath(fallback)


def add_urls(value: Any, root_url: str | None) -> Any:
    """Set the absolute URL of every published file in a postprocessed value (in place), so Gradio passes
    them through untouched; files that were not published keep no URL and Gradio handles them as usual."""
    if root_url is None:
        return value
    prefix = str(publish_root()) + os.sep
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            path = item.get("path")
            if isinstance(path, str) and isinstance(item.get("meta"), dict) and path.startswith(prefix):
                item["url"] = file_url(path, root_url)
            else:
                stack.extend(v for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, (dict, list)))
    return value
