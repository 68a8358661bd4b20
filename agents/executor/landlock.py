"""Landlock (Linux >= 5.13) through raw syscalls with ctypes.

Restricts the calling thread and its future threads: read-only access to the
listed folders, read-write to the workspace and the private temp folder, no
execute right anywhere (so no execve), no TCP bind/connect (ABI >= 4), and no
signals or abstract UNIX sockets across the sandbox boundary (ABI >= 6).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

SYS_CREATE_RULESET = 444  # same number on x86_64 and aarch64
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
READ = FS_READ_FILE | FS_READ_DIR
READ_WRITE = (
    READ | FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_DIR | FS_MAKE_REG
    | FS_REFER | FS_TRUNCATE
)


class LandlockError(OSError):
    """Landlock is unavailable or could not be applied."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64),
                ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@dataclass
class LandlockResult:
    abi: int
    network: bool
    scoped: bool
    skipped_paths: list[str] = field(default_factory=list)


_libc: ctypes.CDLL | None = None


def _syscall() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc


def abi_version() -> int:
    """The Landlock ABI the kernel offers, or 0 when it has none (or it is blocked)."""
    libc = _syscall()
    res = libc.syscall(ctypes.c_long(SYS_CREATE_RULESET), None, ctypes.c_size_t(0),
                       ctypes.c_uint32(CREATE_RULESET_VERSION))
    return int(res) if res > 0 else 0


def _handled_fs(abi: int) -> int:
    rights = (FS_MAKE_SYM << 1) - 1  # ABI 1: bits 0..12
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def restrict(read_paths: Iterable[str], write_paths: Iterable[str],
             read_write_files: Iterable[str] = ()) -> LandlockResult:
    """Apply Landlock to the calling thread. Raises LandlockError if it cannot."""
    abi = abi_version()
    if abi < 1:
        raise LandlockError("Landlock is not offered by this kernel (or is blocked)")
    libc = _syscall()
    handled = _handled_fs(abi)
    attr = _RulesetAttr(handled_access_fs=handled,
                        handled_access_net=(NET_BIND_TCP | NET_CONNECT_TCP) if abi >= 4 else 0,
                        scoped=(SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0)
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    fd = libc.syscall(ctypes.c_long(SYS_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(size),
                      ctypes.c_uint32(0))
    if fd < 0:
        raise LandlockError(ctypes.get_errno(), "landlock_create_ruleset failed")
    result = LandlockResult(abi=abi, network=abi >= 4, scoped=abi >= 6)
    try:
        rules = [(p, READ) for p in read_paths] + [(p, READ_WRITE) for p in write_paths]
        rules += [(p, FS_READ_FILE | FS_WRITE_FILE) for p in read_write_files]
        for path, rights in rules:
            if not _add_path_rule(libc, fd, path, rights & handled):
                result.skipped_paths.append(path)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise LandlockError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS) failed")
        if libc.syscall(ctypes.c_long(SYS_RESTRICT_SELF), ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            raise LandlockError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(fd)
    return result


def _add_path_rule(libc: ctypes.CDLL, ruleset_fd: int, path: str, rights: int) -> bool:
    try:
        pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS
        attr = _PathBeneathAttr(allowed_access=rights, parent_fd=pfd)
        res = libc.syscall(ctypes.c_long(SYS_ADD_RULE), ctypes.c_int(ruleset_fd),
                           ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(attr), ctypes.c_uint32(0))
        if res != 0:
            raise LandlockError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
        return True
    finally:
        os.close(pfd)
