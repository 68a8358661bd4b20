"""Deleted files a process keeps only mapped, where their size cannot be read (worker_watch.held_deleted).

Why: a remote sandbox's supervisor lacks CAP_SYS_ADMIN/CAP_CHECKPOINT_RESTORE, so /proc/<pid>/map_files is
refused to it; it counted only the mapped range (4 KiB of a 4 MiB file), and 16 MiB hid under a 10 MB limit.
Now such a file on the sandbox's own file systems fails the limit closed; one still open is sized through its
descriptor, and shared memory (`/dev/zero (deleted)`) is not taken for disk. The refusal is played here by
making the map_files read fail, as it does for the supervisor.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agents.executor.local import worker_watch

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="/proc")

CHILD = (  # libc's mmap: Python's mmap.mmap keeps a duplicate of the descriptor open
    "import ctypes, mmap, os, sys\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.mmap.restype = ctypes.c_void_p\n"
    "libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]\n"
    "folder, mode = sys.argv[1], sys.argv[2]\n"
    "name = os.path.join(folder, 'held.bin')\n"
    "with open(name, 'wb') as fh:\n"
    "    fh.write(os.urandom(4 << 20))\n"
    "fd = os.open(name, os.O_RDWR)\n"
    "assert libc.mmap(None, 4096, 1, 1, fd, 0) not in (None, ctypes.c_void_p(-1).value)\n"
    "shared = mmap.mmap(-1, 1 << 20)\n"  # shared anonymous memory: '/dev/zero (deleted)' in maps
    "if mode == 'closed':\n"
    "    os.close(fd)\n"
    "os.unlink(name)\n"
    "print('ready', flush=True)\n"
    "sys.stdin.read()\n"
)


@pytest.fixture(params=["closed", "open"])
def child(request, tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path), request.param],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    yield request.param, proc
    proc.kill()
    proc.wait()


def _refuse_map_files(monkeypatch) -> None:
    real = os.stat

    def stat(path, *args, **kwargs):
        if "/map_files/" in str(path):
            raise PermissionError(1, "Operation not permitted", path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(worker_watch.os, "stat", stat)


def test_a_mapped_deleted_file_is_sized_where_map_files_can_be_read(child, tmp_path):
    mode, proc = child
    if not os.access(f"/proc/{proc.pid}/map_files", os.R_OK) or os.geteuid() != 0:
        pytest.skip("map_files needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE")
    held = worker_watch.held_deleted(proc.pid, devices=frozenset({os.stat(tmp_path).st_dev}))
    assert held.unsized == 0 and held.bytes >= 4 << 20, held


def test_without_map_files_a_mapped_deleted_file_fails_the_limit_closed(child, tmp_path, monkeypatch):
    mode, proc = child
    _refuse_map_files(monkeypatch)
    held = worker_watch.held_deleted(proc.pid, devices=frozenset({os.stat(tmp_path).st_dev}))
    why = worker_watch.disk_over([str(tmp_path)], proc.pid, max_mb=10, max_files=100)
    if mode == "open":  # sized through its descriptor: nothing unsized, and 4 MiB is within 10 MB
        assert held.unsized == 0 and held.bytes >= 4 << 20, held
        assert why is None
    else:  # only the mapping keeps it: its size cannot be known, so it counts as over
        assert held.unsized == 1, held
        assert why is not None and "max_disk_mb" in why and "deleted file(s) mapped" in why, why
    # The shared anonymous memory is never what makes it unsized (it is memory, off the sandbox's folders).
    assert worker_watch.held_deleted(proc.pid, devices=frozenset()).unsized == held.unsized
