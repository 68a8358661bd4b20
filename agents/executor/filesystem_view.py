"""Layer 4a: a private file system view for the worker (a mount namespace with its own root).

Why: Landlock decides which files may be *opened*, but not what ``stat``, ``chmod``, ``utime`` or
``setxattr`` may touch, and it applies per thread. A new root made of a small tmpfs holding
read-only bind mounts of the library folders and read-write binds of the workspace and the private
temp folder closes that whole class in the kernel: every other path (the app, its secrets, other
sessions' workspaces, ``/proc``, ``/etc``) does not exist for the worker, and the library folders
are read-only mounts, whatever the file permissions say and on every thread.

Paths keep their absolute names inside the view, so ``sys.path`` and the workspace path work as
before. Needs CAP_SYS_ADMIN (the app runs as root) or unprivileged user namespaces; where neither
is available the layer reports itself inactive and Landlock plus seccomp remain.
"""

from __future__ import annotations

import ctypes
import os
import stat as stat_mod

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
_SYS_PIVOT_ROOT = {"x86_64": 155, "amd64": 155, "aarch64": 41, "arm64": 41}
_ST_FLAGS = ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC))
OLD_ROOT = ".old-root"


class FilesystemViewError(OSError):
    """The private file system view could not be built."""


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    libc.syscall.restype = ctypes.c_long
    return libc


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise FilesystemViewError(err, f"{what}: {os.strerror(err)}")


def _mount(libc: ctypes.CDLL, source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    def enc(text: str | None) -> bytes | None:
        return None if text is None else text.encode()

    _check(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {source} on {target}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def enter_namespace() -> str:
    """Private mount, IPC and network namespaces: as root directly, otherwise inside a new user namespace.

    The network namespace (about 1 ms to make) has no interface but a loopback that is down, and abstract UNIX
    socket names of its own: even code that got a socket could not reach or squat a name outside."""
    libc = _libc()
    if os.geteuid() == 0:
        _check(libc.unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET),
               "unshare(CLONE_NEWNS|CLONE_NEWIPC|CLONE_NEWNET)")
        return "mount, IPC and network namespace"
    uid, gid = os.geteuid(), os.getegid()
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET),
           "unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWIPC|CLONE_NEWNET)")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    return "user, mount, IPC and network namespace"


def _inherited_flags(path: str) -> int:
    """Flags the source mount has and a remount must keep (they are locked inside a user namespace)."""
    try:
        fflags = os.statvfs(path).f_flag
    except OSError:
        return MS_NOSUID | MS_NODEV
    return sum(ms for st, ms in _ST_FLAGS if fflags & st)


def _make_dirs(root: str, path: str) -> str:
    target = root + path
    os.makedirs(target, mode=0o755, exist_ok=True)
    return target


def _nested_outside(paths: list[str]) -> list[str]:
    """Drop paths that lie under another path of the list (the outer bind already shows them)."""
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return kept


def build(new_root: str, read_paths: list[str], write_paths: list[str], device_files: list[str],
          arch: str) -> str:
    """Pivot into a tmpfs root that holds only the given paths (same names); returns a summary.

    Must run single-threaded, before the privileges are dropped and before Landlock and seccomp.
    """
    libc = _libc()
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    _mount(libc, "tmpfs", new_root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    read_only = [p for p in _nested_outside(read_paths) if os.path.isdir(p)]
    for path in read_only:
        target = _make_dirs(new_root, path)
        _mount(libc, path, target, None, MS_BIND | MS_REC)
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | _inherited_flags(path)
        _mount(libc, None, target, None, flags)
    for path in write_paths:
        target = _make_dirs(new_root, path)
        _mount(libc, path, target, None, MS_BIND)
        _mount(libc, None, target, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | _inherited_flags(path))
    for path in device_files:
        if not stat_mod.S_ISCHR(os.stat(path).st_mode):
            continue
        _make_dirs(new_root, os.path.dirname(path))
        target = new_root + path
        os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
        _mount(libc, path, target, None, MS_BIND)
    old = os.path.join(new_root, OLD_ROOT)
    os.mkdir(old, 0o700)
    _check(libc.syscall(ctypes.c_long(_SYS_PIVOT_ROOT[arch]), new_root.encode(), old.encode()), "pivot_root")
    os.chdir("/")
    _check(libc.umount2(("/" + OLD_ROOT).encode(), MNT_DETACH), "umount of the old root")
    os.rmdir("/" + OLD_ROOT)
    _mount(libc, None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    return (f"private root: {len(read_only)} read-only library folders, {len(write_paths)} writable "
            "(workspace, temp); nothing else exists (no /proc, /etc, app or other workspaces)")
