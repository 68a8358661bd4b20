"""Layer 4b: who the worker is. When the app runs as root, each sandbox gets a user id of its own.

Why: with the app's identity a worker that got past Landlock could write whatever the app can
(site-packages, the app's folder); as root, everything. With a user id no file outside its
workspace belongs to, file permissions refuse writes, mode, owner, time and attribute changes, and
signals to other processes, independently of the other layers. Ids are drawn from a range that no
account uses (``configure_host(sandbox_uids=...)``, default 40000-59999; the app's ``AGENTDECK_SANDBOX_UIDS``),
one per live sandbox in the process.

App side: ``allocate``/``release`` and ``give_tree`` (hand the workspace to that id without
following links the worker may have planted). Worker side: ``become``.
"""

from __future__ import annotations

import ctypes
import os
import random
import stat
import threading
from collections.abc import Callable

from .tree_walk import Entry, TreeWalk, WalkError, open_dir

DEFAULT_RANGE = (40000, 60000)
_lock = threading.Lock()
_in_use: set[int] = set()
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_VERSION_3 = 0x20080522


class IdentityError(OSError):
    """The worker could not take (or prove it took) its unprivileged identity."""


def uid_range() -> tuple[int, int]:
    """The ids to pick from (first, one past the last): `configure_host(sandbox_uids=...)` (agents/host_settings.py)."""
    from agents.host_settings import host_settings

    return host_settings().sandbox_uids


def allocate() -> int | None:
    """A fresh user id for one sandbox when the app runs as root; None otherwise (no change possible)."""
    if os.geteuid() != 0:
        return None
    low, high = uid_range()
    with _lock:
        for _ in range(1000):
            uid = random.randrange(low, high)
            if uid not in _in_use:
                _in_use.add(uid)
                return uid
    raise IdentityError(f"no free sandbox user id left in {low}-{high - 1} (the app's AGENTDECK_SANDBOX_UIDS)")


def release(uid: int | None) -> None:
    if uid is not None:
        with _lock:
            _in_use.discard(uid)


def give_tree(root: str, uid: int, max_entries: int = 50000,
              on_entry: Callable[[TreeWalk, Entry], None] | None = None) -> str | None:
    """Make ``root`` and everything below owned by ``uid`` (app side, as root). Returns None when all of it
    was handed over, else why not (what is past that point keeps its owner: the worker may not change it).

    Walks by directory descriptor to any depth with a few descriptors at most (tree_walk.py), and never follows
    a link: a worker that swaps a folder for a link to ``/etc`` while this runs cannot redirect it. Files are
    changed through a descriptor of their own, after checking they have one link only (a hard link to a file
    outside the workspace must not change that file's owner); fifos open without waiting; links and sockets are
    left as they are. `on_entry`: called with every entry the walk meets (before it is handed over), so another
    count of the tree can share this walk.
    """
    try:
        top = open_dir(root)
    except OSError as exc:
        return f"could not open the workspace ({exc.strerror})"
    try:
        if os.fstat(top).st_uid != uid:
            os.fchown(top, uid, uid)
    except OSError as exc:
        return f"could not hand the workspace over ({exc.strerror})"
    finally:
        os.close(top)
    walk = TreeWalk(root, max_entries)
    try:
        for entry in walk:
            if on_entry is not None:
                on_entry(walk, entry)
            if entry.st.st_uid == uid:
                continue
            try:
                _give(entry.name, entry.dir_fd, uid, stat.S_ISDIR(entry.st.st_mode))
            except OSError:
                continue  # gone, a link or a socket: it stays as it is
    except WalkError as exc:
        return f"the workspace was not all handed to the sandbox's user: {exc}"
    return None


def _give(name: str, dir_fd: int, uid: int, folder: bool) -> None:
    """Change one entry's owner through a descriptor of its own: a name the worker swaps meanwhile (for a link,
    or a hard link to a file outside) cannot redirect it. Links themselves are left (ELOOP): who owns a link
    changes nothing the worker may do with it."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    fd = open_dir(name, dir_fd) if folder else os.open(name, flags, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if st.st_uid == uid or (stat.S_ISREG(st.st_mode) and st.st_nlink > 1):
            return
        os.fchown(fd, uid, uid)
    finally:
        os.close(fd)


def _drop_bounding_set(libc: ctypes.CDLL) -> None:
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)


def _clear_capabilities(libc: ctypes.CDLL) -> None:
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    if libc.capset(header, data) != 0:
        raise IdentityError(ctypes.get_errno(), "capset failed")


def become(uid: int | None) -> str:
    """Worker side: drop every capability and, when given one, switch to ``uid`` for good."""
    libc = ctypes.CDLL(None, use_errno=True)
    _drop_bounding_set(libc)
    if uid is None:
        _clear_capabilities(libc)
        same = "the app's user" if os.geteuid() else "uid 0 without privileges"
        return f"all capabilities dropped; runs as {same}"
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    _clear_capabilities(libc)
    try:
        os.setresuid(0, 0, 0)
    except PermissionError:
        pass
    else:
        raise IdentityError("the worker could take uid 0 back after dropping it")
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (uid, uid, uid) or os.getgroups():
        raise IdentityError("the worker's identity is not what was set")
    return f"runs as its own unprivileged user {uid} (no groups, no capabilities)"
