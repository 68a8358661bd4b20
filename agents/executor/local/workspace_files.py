"""The workspace's files read and written by the app through directory descriptors, never following a link.

Why: the worker owns the workspace and can put a symbolic link (or a link's parent folder) anywhere in it; a
path opened by name could then make the app read or overwrite a file outside the workspace. Every component is
opened with O_NOFOLLOW below a descriptor of the workspace itself.
"""

from __future__ import annotations

import os
import secrets
import stat
from typing import BinaryIO

from ..backend import FileTooLarge

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _parts(relpath: str) -> list[str]:
    parts = [p for p in relpath.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or relpath.startswith("/") or ".." in parts or any("\0" in p for p in parts):
        raise PermissionError(f"not a path inside the workspace: {relpath!r}")
    return parts


def check_relpath(relpath: str) -> None:
    """PermissionError unless `relpath` names something inside the workspace (relative, no `..`, no NUL)."""
    _parts(relpath)


def is_inside(relpath: str) -> bool:
    """Whether `relpath` names something inside the workspace (see `check_relpath`)."""
    try:
        _parts(relpath)
    except PermissionError:
        return False
    return True


def is_plain(relpath: str) -> bool:
    """Whether `relpath` is inside the workspace and already in its one plain form: no `.` or empty step, no
    trailing `/`, no backslash (which `_parts` reads as a folder step). Names that come from outside (a remote
    service's listing, a shared manifest) must be plain, or one name could land as another, or two as one file."""
    return is_inside(relpath) and "\\" not in relpath and relpath == "/".join(_parts(relpath))


def _open_parent(root: str, parts: list[str], create: bool, uid: int | None) -> int:
    """A descriptor of the folder holding the last part (made if `create`), every step opened without links."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            if create:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                    if uid is not None:
                        os.chown(part, uid, uid, dir_fd=fd, follow_symlinks=False)
                except FileExistsError:
                    pass
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (40, 20):  # ELOOP, ENOTDIR: a link or a file where a folder should be
                    raise PermissionError(f"{'/'.join(parts)!r} goes through a link or a file") from None
                raise
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_regular(root: str, relpath: str) -> int:
    """A read-only descriptor of the regular file `relpath` below `root` (the caller closes it), every step opened
    without links; PermissionError for a link, a folder, a FIFO or a path out of `root`."""
    parts = _parts(relpath)
    parent = _open_parent(root, parts, False, None)
    try:
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=parent)
        except OSError as exc:
            if exc.errno == 40:
                raise PermissionError(f"{relpath!r} is a link") from None
            raise
    finally:
        os.close(parent)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PermissionError(f"{relpath!r} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read(root: str, relpath: str, max_bytes: int) -> bytes:
    """The content of the regular file `relpath` below `root` (see `SandboxHost.get_file`)."""
    fd = open_regular(root, relpath)
    try:
        st = os.fstat(fd)
        if st.st_size > max_bytes:
            raise FileTooLarge(f"{relpath!r} is {st.st_size:,} bytes, over the cap of {max_bytes:,}")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > max_bytes:  # it grew while read
                raise FileTooLarge(f"{relpath!r} is over the cap of {max_bytes:,} bytes")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def remove(root: str, relpath: str) -> None:
    """Delete the file `relpath` below `root` (never a folder), every folder on the way opened without links: a
    folder the worker swaps for a link after the app listed the file never leads the delete out of `root`."""
    parts = _parts(relpath)
    parent = _open_parent(root, parts, False, None)
    try:
        if stat.S_ISDIR(os.stat(parts[-1], dir_fd=parent, follow_symlinks=False).st_mode):
            raise PermissionError(f"{relpath!r} is a folder")
        os.unlink(parts[-1], dir_fd=parent)  # a final link is removed itself, never followed
    finally:
        os.close(parent)


def write(root: str, relpath: str, data: bytes | BinaryIO, max_bytes: int, uid: int | None,
          exclusive: bool = False) -> None:
    """Replace (or create) the regular file `relpath` below `root` whole (see `SandboxHost.put_file`). `data` may
    be a binary stream, copied in chunks and refused (`FileTooLarge`, nothing left behind) past `max_bytes`.
    `exclusive`: `FileExistsError` if anything has that name (an upload never replaces a file), decided by
    the kernel when the complete file is linked into place, not by an earlier look."""
    if isinstance(data, (bytes, bytearray, memoryview)) and len(data) > max_bytes:
        raise FileTooLarge(f"{len(data):,} bytes for {relpath!r}, over the cap of {max_bytes:,}")
    parts = _parts(relpath)
    parent = _open_parent(root, parts, True, uid)
    try:
        try:
            st = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                raise PermissionError(f"{relpath!r} is a folder")
            if exclusive:
                raise FileExistsError(f"{relpath!r} exists already")
        except FileNotFoundError:
            pass
        temp = f".agentdeck-put-{secrets.token_hex(8)}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                     dir_fd=parent)
        try:
            try:
                _copy_into(fd, data, relpath, max_bytes)
                if uid is not None:
                    os.fchown(fd, uid, uid)
            finally:
                os.close(fd)
            if exclusive:  # link(2) never replaces: a name taken since the look above is refused here
                os.link(temp, parts[-1], src_dir_fd=parent, dst_dir_fd=parent, follow_symlinks=False)
                os.unlink(temp, dir_fd=parent)
            else:
                os.replace(temp, parts[-1], src_dir_fd=parent, dst_dir_fd=parent)  # a link in its place is replaced
        except BaseException:
            try:
                os.unlink(temp, dir_fd=parent)
            except OSError:
                pass
            raise
    finally:
        os.close(parent)


def _copy_into(fd: int, data: bytes | BinaryIO, relpath: str, max_bytes: int) -> None:
    """Write `data` (bytes or a binary stream) to `fd`; `FileTooLarge` once a stream passes `max_bytes`."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        return
    total = 0
    while chunk := data.read(1 << 20):
        total += len(chunk)
        if total > max_bytes:
            raise FileTooLarge(f"{relpath!r} is over the cap of {max_bytes:,} bytes")
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view):]
