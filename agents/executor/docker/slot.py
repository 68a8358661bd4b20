"""A pooled container's workspace slot: the folder where a session's workspace appears once the container is
handed to a session (a warm start).

A container's bind mounts are fixed when it is created, before any session is known. So a pooled container gets
an app-private, empty folder of this host (the slot) bind-mounted at the same path with ``rslave`` propagation:
mounts made later on the host under the slot appear in the container, none made in the container come back.
The slot is its own mount point in a peer group of its own (``MS_SHARED``), which both lets Docker accept that
propagation and keeps it to this one folder. At `assign` the app (root) binds the session's workspace onto the
slot, before it sends the worker its settings: the worker, which until then only loaded libraries and ran no
code, confines itself (private view, own uid, Landlock, seccomp) with the workspace already in place, exactly as
a worker started cold. On close the slot's mounts are detached (which propagates into the container, if it still
lives) and the folder removed; slots of an app that was killed are swept by the next app's first start
(`sweep`), recognised by the pid in their name.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import stat
import tempfile

from ..errors import SandboxStartError

PREFIX = "agentdeck-slot-"
MS_BIND = 4096
MS_REC = 16384
MS_SHARED = 1 << 20
MNT_DETACH = 2
UMOUNT_NOFOLLOW = 8
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]


def supported() -> bool:
    """Binding a workspace onto a slot needs the app to be root (CAP_SYS_ADMIN in the host's mount namespace)."""
    return os.geteuid() == 0


def _mount(source: str | None, target: str, flags: int) -> None:
    if _libc.mount(source.encode() if source else None, target.encode(), None, flags, None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source or ''} on {target}: {os.strerror(err)}")


def _detach_all(path: str) -> None:
    """Detach every mount stacked on `path` (the workspace's bind, then the slot's own). Never through a link:
    `sweep` takes names anyone may make in the shared temp folder, and a link named like a slot would have the
    app (root) detach whatever mount it points to."""
    for _ in range(8):  # stops at the first failure: EINVAL once `path` is no mount point, ENOENT if gone
        if _libc.umount2(path.encode(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0:
            return


class WorkspaceSlot:
    """One container's slot: made before the container, filled once at `assign`, removed with the container."""

    def __init__(self) -> None:
        if not supported():
            raise SandboxStartError("the Docker backend's warm start binds the workspace into a running container, "
                                    "which needs the app to run as root; without it sandboxes start cold")
        self.path = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}-")
        self.filled = False
        try:
            os.chmod(self.path, 0o700)
            _mount(self.path, self.path, MS_BIND)
            _mount(None, self.path, MS_SHARED)
        except OSError as exc:
            self.release()
            raise SandboxStartError(f"could not prepare the warm sandbox's workspace slot: {exc}") from exc

    def fill(self, workdir: str) -> None:
        """Bind the session's workspace (a folder, never a link: opened with O_NOFOLLOW) onto the slot."""
        if self.filled:
            raise SandboxStartError("this warm sandbox already has a workspace")
        self.filled = True
        try:
            fd = os.open(workdir, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise SandboxStartError(f"the session's workspace {workdir!r} is not a folder: {exc}") from exc
        try:
            _mount(f"/proc/self/fd/{fd}", self.path, MS_BIND)
        except OSError as exc:
            raise SandboxStartError(f"could not bind the workspace into the warm sandbox: {exc}") from exc
        finally:
            os.close(fd)

    def release(self) -> None:
        _detach_all(self.path)
        try:
            os.rmdir(self.path)
        except OSError:
            pass


def _mount_points() -> list[str]:
    try:
        with open("/proc/self/mountinfo") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    points = []
    for line in lines:
        fields = line.split()
        if len(fields) > 4:  # octal escapes (\040 for a space) as the kernel writes them
            points.append(fields[4].encode().decode("unicode_escape"))
    return points


def _owner_alive(name: str) -> bool:
    pid = name[len(PREFIX):].split("-", 1)[0]
    return pid.isdigit() and int(pid) > 1 and os.path.exists(f"/proc/{pid}")


def sweep() -> int:
    """Detach and remove the slots of apps that are gone (killed before they could close their sandboxes)."""
    if not supported():
        return 0
    base = tempfile.gettempdir()
    found = {os.path.basename(p) for p in _mount_points() if os.path.dirname(p) == base
             and os.path.basename(p).startswith(PREFIX)}
    try:
        found |= {n for n in os.listdir(base) if n.startswith(PREFIX)}
    except OSError:
        pass
    removed = 0
    for name in found:
        if _owner_alive(name):
            continue
        path = os.path.join(base, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            continue  # not a slot of ours: a link, a file, or another user's folder named like one
        _detach_all(path)
        try:
            os.rmdir(path)
            removed += 1
        except OSError:
            pass
    return removed
