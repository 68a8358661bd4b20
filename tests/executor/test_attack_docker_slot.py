"""A warm Docker sandbox's workspace slot, attacked from code that holds the real ``os`` and ``ctypes``.

A pooled container is created before its session is known, so its workspace arrives later through a bind mount
the app (root) makes on the container's slot (`agents/executor/docker/slot.py`). That mount is the one path
between a warm container and the app's disk. Code in the session's worker (``python_layers=False``: no syntax
guard, no audit hook, as after a full Python bypass) tries to use it to reach back: mount and namespace calls on
the slot, writes beside it, links and a fifo planted for the app to follow. The test checks from outside that the
app's mount table, its disk and its reads of the workspace did not change.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from agents.executor import PythonSandbox, backends
from agents.executor.docker import daemon
from agents.executor.pool import WarmPool
from tests.waiting import wait_until

WHY_NOT = daemon.reachable()
pytestmark = [pytest.mark.docker,
              pytest.mark.skipif(WHY_NOT is not None, reason=f"no Docker Engine: {WHY_NOT}")]

ATTACK = r'''
import os, ctypes, json, stat
P = json.loads(PARAMS)
out = {}
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def attempt(name, fn):
    try:
        out[name] = "SUCCEEDED: " + repr(fn())[:200]
    except BaseException as exc:
        out[name] = "blocked: " + type(exc).__name__ + " " + str(exc)[:80]

def call(nr, *args):
    r = libc.syscall(nr, *args)
    if r < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return r

slot = os.getcwd().encode()
# x86_64 numbers: mount 165, umount2 166, pivot_root 155, chroot 161, unshare 272, setns 308,
# open_tree 428, move_mount 429, fsopen 430, mount_setattr 442
attempt("umount-slot", lambda: call(166, slot, 2))
attempt("bind-root-onto-slot", lambda: call(165, b"/", slot, None, 4096 | 16384, None))
attempt("remount-slot-shared", lambda: call(165, None, slot, None, 1 << 20, None))
attempt("open-tree-slot", lambda: call(428, -100, slot, 1 | 0x80000))
attempt("fsopen", lambda: call(430, b"tmpfs", 0))
attempt("mount-setattr", lambda: call(442, -100, slot, 0, None, 0))
attempt("unshare-user-mount", lambda: call(272, 0x10000000 | 0x00020000))
attempt("chroot", lambda: call(161, b"/"))
attempt("pivot-root", lambda: call(155, slot, slot))
def write_beside():
    fd = os.open(os.path.join(os.path.dirname(os.getcwd()), "pwned-beside-slot"), os.O_WRONLY | os.O_CREAT, 0o644)
    os.close(fd)
attempt("write-beside-slot", write_beside)
attempt("chmod-beside-slot", lambda: os.chmod(os.path.dirname(os.getcwd()), 0o777))
attempt("mknod-device", lambda: os.mknod("dev-node", 0o600 | stat.S_IFCHR, os.makedev(1, 3)))
# plant what the app reads back: links out of the workspace and a fifo that would block a careless reader
for name, target in P["links"].items():
    attempt("plant:" + name, lambda n=name, t=target: os.symlink(t, n))
attempt("plant:pipe", lambda: os.mkfifo("pipe"))
open("regular.txt", "w").write("the code's file")
json.dumps(out)
'''


def _mount_table() -> list[str]:
    with open("/proc/self/mountinfo") as fh:
        return [line.split()[4] for line in fh]


@pytest.fixture(scope="module")
def backend():
    be = backends.get("docker")
    be.client_and_image()
    if not be.capabilities.warm_start:
        pytest.skip("warm Docker starts need the app to run as root")
    return be


def test_code_in_a_warm_container_cannot_reach_back_through_its_slot(tmp_path, backend):
    secret = tmp_path / "app-secret.txt"
    secret.write_text("the app's signing secret")
    pool = WarmPool(backend, size=1)
    first = second = None
    spec = None
    try:
        first = PythonSandbox(str(tmp_path / "a" / "ws"), backend=backend, pool=pool, python_layers=False,
                              timeout_s=20)
        spec = first.spec
        wait_until(lambda: bool(pool.ready_hosts(spec)), 120, "a pooled container")
        pooled = pool.ready_hosts(spec)[0]
        slot_path = pooled._slot.path
        beside = os.path.dirname(slot_path)
        beside_mode = os.stat(beside).st_mode
        second = PythonSandbox(str(tmp_path / "b" / "ws"), backend=backend, pool=pool, python_layers=False,
                               timeout_s=20)
        assert second.host is pooled, "the session did not take the warm container: the slot was not exercised"
        watched = (slot_path, str(tmp_path), "/tmp", "/etc", "/")
        mounts_before = [m for m in _mount_table() if m.startswith(watched[:2]) or m in watched]
        links = {"to-secret": str(secret), "to-root": "/", "to-slot-parent": os.path.dirname(slot_path)}
        params = json.dumps({"links": links})
        result = second.run(f"PARAMS = {params!r}\n" + ATTACK)
        assert result.error is None, result.error
        outcomes = json.loads(result.output)
        succeeded = {name: what for name, what in outcomes.items()
                     if what.startswith("SUCCEEDED") and not name.startswith("plant:")}
        assert not succeeded, succeeded

        # From outside: nothing mounted or unmounted on the app's side at the slot, the session's folders or the
        # system's (the pool's refill adds containers and slots of its own meanwhile), nothing written beside it.
        assert [m for m in _mount_table() if m.startswith(watched[:2]) or m in watched] == mounts_before
        assert not os.path.lexists(os.path.join(beside, "pwned-beside-slot"))
        assert os.stat(beside).st_mode == beside_mode
        # The app's reads of the workspace follow no link and never block on the fifo.
        # Planting may itself be refused (Landlock); whatever was planted, the app neither follows nor blocks.
        workspace = second.workdir
        for name in (*links, "pipe"):
            planted = outcomes[f"plant:{name}"].startswith("SUCCEEDED")
            assert planted == os.path.lexists(os.path.join(workspace, name)), (name, outcomes[f"plant:{name}"])
            if planted:
                with pytest.raises(PermissionError):
                    second.host.get_file(name)
        listed = second.host.list_files()
        assert set(listed) == {"regular.txt"}, listed
        assert second.host.get_file("regular.txt") == b"the code's file"
        assert secret.read_text() == "the app's signing secret"

        second.close()
        assert slot_path not in _mount_table() and not os.path.exists(slot_path)
        assert stat.S_ISREG(os.lstat(os.path.join(workspace, "regular.txt")).st_mode)  # the session's files stay
    finally:
        for sb in (first, second):
            if sb is not None:
                sb.close()
        if spec is not None:
            wait_until(lambda: not pool._thread or pool.ready_hosts(spec), 120, "the pool's refill to settle")
        pool.close()
