"""Writing a file so that readers see the old version or the new one, never a torn one, and saves don't race.

Why: two tabs (or two server threads) saving one chat at once shared one temporary name and took no lock:
files were torn and saves failed. Each write gets its own temporary file in the target's folder, is flushed
to disk (fsync) before the rename, and writes to one path are serialised by a lock held across processes
(`flock` on a sibling lock file) as well as threads. A failure leaves the previous version intact and
removes the temporary file.
"""
from __future__ import annotations

import fcntl
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _thread_lock(path: Path) -> threading.Lock:
    key = str(path)
    with _locks_guard:
        lock = _locks.get(key)
        if lock is None:
            lock = _locks[key] = threading.Lock()
        return lock


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes,
                       check: Callable[[bytes | None], None] | None = None) -> Path:
    """Write `data` to `path` (see the module's docstring). `check`, when given, sees the current content (None
    when there is none) while the lock is held and may raise to refuse the write: a compare-and-swap for callers
    that must not overwrite a version they have not seen (ui/shared/blobs.py)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with _thread_lock(target):
        lock_fd = os.open(target.with_name(f".{target.name}.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            if check is not None:
                try:
                    current: bytes | None = target.read_bytes()
                except FileNotFoundError:
                    current = None
                check(current)
            fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(temporary, target)
            except BaseException:
                try:
                    os.unlink(temporary)
                except OSError:
                    pass
                raise
            dir_fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        finally:
            os.close(lock_fd)  # releases the flock
    return target
