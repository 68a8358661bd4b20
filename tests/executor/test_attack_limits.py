"""Limits a worker whose code bypassed every Python-level layer cannot defeat: threads left running, CPU and
code between steps, memory, and disk (wherever it writes, deleted files it still holds included).
The sandboxes run with ``python_layers=False``, as in test_attack_kernel.py."""

from __future__ import annotations

import sys

import pytest

from agents.executor import PythonSandbox, run_watch
from agents.executor.local import worker_watch
from tests.waiting import wait_until

# Each test runs once per usable sandbox backend (conftest.py: sandbox_backend).
pytestmark = [pytest.mark.skipif(sys.platform != "linux", reason="Linux confinement"),
              pytest.mark.usefixtures("sandbox_backend")]


def test_thread_left_running_is_stopped(tmp_path):
    with PythonSandbox(str(tmp_path), python_layers=False) as sb:
        r = sb.run(
            "import threading, time\n"
            "def spin():\n    while True: pass\n"
            "threading.Thread(target=spin, daemon=True).start()\n"
            "'started'"
        )
        assert r.output == "started" and r.state_lost
        assert "thread" in r.logs
        r2 = sb.run("import threading\nthreading.active_count()")
        assert r2.output == 1

def test_nothing_of_the_code_runs_between_steps(tmp_path):
    with PythonSandbox(str(tmp_path), python_layers=False) as sb:
        r = sb.run(
            "import threading\n"
            "def tick():\n"
            "    n = 0\n"
            "    while True:\n"
            "        threading.Event().wait(0.05)\n"
            "        n += 1\n"
            "        open('ticks.txt', 'w').write(str(n))\n"
            "t = threading.Thread(target=tick, daemon=True)\n"
            "threading._active.pop(t.ident, None) if False else None\n"
            "t.start()\nthreading._active.pop(t.ident, None)\n'planted'"
        )
        assert r.output == "planted"
        # Stopped by the kernel (or replaced): no thread of the step's code can run until the next step.
        wait_until(lambda: worker_watch.is_stopped(sb._worker.pid), 10, "the worker to be stopped between steps")

def test_cpu_burnt_between_steps_restarts_the_worker(tmp_path):
    with PythonSandbox(str(tmp_path), python_layers=False) as sb:
        # A signal handler that keeps computing after the step returned (the SIGALRM fires later).
        r = sb.run(
            "import signal\n"
            "def burn(*a):\n    x = 0\n    for i in range(10**8): x += i\n"
            "signal.signal(signal.SIGALRM, burn)\nsignal.setitimer(signal.ITIMER_REAL, 0.01)\n'armed'"
        )
        # The worker restores every handler after the step, so the timer finds the default action (a
        # termination) or nothing at all: either way the next step runs in a sound worker.
        r2 = sb.run("41 + 1")
        assert r2.output == 42
        assert r.output == "armed"

def test_default_memory_limit_refuses_one_and_a_half_gib(tmp_path):
    with PythonSandbox(str(tmp_path)) as sb:
        r = sb.run("x = bytearray(1536 * 1024 * 1024)")
        assert r.error_type == "MemoryError"
        assert "memory_limit_mb" in r.error

def test_files_in_private_temp_count_against_disk_limit(tmp_path):
    with PythonSandbox(str(tmp_path / "ws"), python_layers=False, max_disk_mb=5) as sb:
        r = sb.run("import os, tempfile\n"
                   "for i in range(8):\n"
                   "    open(os.path.join(tempfile.gettempdir(), f'f{i}'), 'wb').write(os.urandom(1 << 20))\n")
        assert r.error_type == "DiskLimitError" and "max_disk_mb" in r.error
        left = sb.run("import os, tempfile\n[n for n in os.listdir(tempfile.gettempdir())]").output
        assert [n for n in left if not n.startswith(".agentdeck-worker-")] == []  # only the new worker's log

def test_deep_deleted_and_many_files_count_against_the_disk_limit(tmp_path):
    with PythonSandbox(str(tmp_path / "ws"), python_layers=False, max_disk_mb=20, max_disk_files=500) as sb:
        deep = "/".join(["d"] * 20)
        r = sb.run(f"import os\nos.makedirs({deep!r})\nopen({deep + '/big.bin'!r}, 'wb').write(b'A' * (30 << 20))")
        assert r.error_type == "DiskLimitError", (r.error, r.logs)
        sb.run("import shutil\nshutil.rmtree('d')")
        r = sb.run("f = open('h.bin', 'wb'); f.write(b'A' * (30 << 20)); f.flush()\n"
                   "import os\nos.unlink('h.bin')\nkeep = [f]")
        assert r.error_type == "DiskLimitError"
        r = sb.run("import os\nos.makedirs('many', exist_ok=True)\n"
                   "for i in range(800):\n    open(f'many/{i}', 'w').close()")
        assert r.error_type == "DiskLimitError" and "max_disk_files" in r.error

def test_mapped_deleted_files_count_against_the_disk_limit(tmp_path):
    code = (
        "import os, ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.mmap.restype = ctypes.c_void_p\n"
        "libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,\n"
        "                      ctypes.c_long]\n"
        "for i in range(4):\n"
        "    name = f'held{i}.bin'\n"
        "    with open(name, 'wb') as fh:\n"
        "        fh.write(os.urandom(4 << 20))\n"
        "    fd = os.open(name, os.O_RDONLY)\n"
        "    assert libc.mmap(None, 4096, 1, 1, fd, 0) not in (None, ctypes.c_void_p(-1).value)\n"
        "    os.close(fd)\n"
        "    os.unlink(name)\n"
        "sorted(os.listdir('.'))"
    )
    with PythonSandbox(str(tmp_path), python_layers=False, max_disk_mb=10) as sb:
        r = sb.run(code)
        assert r.error_type == "DiskLimitError", r


def test_the_shared_disk_keeps_its_floor_whatever_each_sandbox_may_write(tmp_path, monkeypatch):
    """max_disk_mb bounds one sandbox; saved chats keep their workspaces, so chat after chat would fill the
    server's disk. Below `min_free_mb` free, code that writes is stopped while it runs, and told why."""
    monkeypatch.setattr(run_watch, "CPU_CHECK_S", 0.05)  # how often the disk is checked while code runs (1 s)
    floor = worker_watch.free_mb(str(tmp_path)) + 1_000_000  # this disk is already below the floor
    with PythonSandbox(str(tmp_path / "ws"), python_layers=False, min_free_mb=floor, timeout_s=60) as sb:
        r = sb.run("import time\nwhile True:\n    open('f.bin', 'ab').write(b'A' * (1 << 16))\n    time.sleep(0.01)")
        assert r.error_type == "DiskLimitError" and "min_free_mb" in r.error, (r.error, r.logs)
        assert "the code was stopped" in r.error
        sb.min_free_mb = 0  # room again: the same sandbox goes on
        assert sb.run("1 + 1").output == 2


@pytest.mark.slow  # two workers start (about 1.8 s)
def test_code_deaf_to_stop_is_ended_with_its_worker(tmp_path, monkeypatch):
    """Code holding the real `signal` blocks SIGINT, ignores it and sleeps (no CPU, so it looks starved) while the
    app repeats the interrupt: the worker is replaced once the grace is over, the result says the variables are
    gone, and nothing of the deaf worker is left running."""
    import os
    import threading

    monkeypatch.setattr(run_watch, "GRACE_S", 0.2)  # 1 s in the app
    monkeypatch.setattr(run_watch, "GRACE_MAX_S", 0.5)  # 8 s in the app
    cancel = threading.Event()
    with PythonSandbox(str(tmp_path), python_layers=False, timeout_s=60) as sb:
        sb.run("kept = 1")
        deaf = sb._worker.pid
        going = threading.Event()
        result: list = []
        runner = threading.Thread(target=lambda: result.append(sb.run(
            "import signal, time\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})\n"
            "signal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('deaf', flush=True)\ntime.sleep(600)",
            on_log=lambda _text: going.set(), cancel=cancel)))
        runner.start()
        wait_until(going.is_set, what="the deaf code running")
        cancel.set()
        runner.join(30)
        assert result and result[0].error_type == "InterruptedError" and result[0].state_lost, result
        assert "lost" in result[0].error
        wait_until(lambda: not os.path.exists(f"/proc/{deaf}"), what="the deaf worker gone")
        after = sb.run("'kept' in globals()")
        assert after.output is False and sb._worker.pid != deaf
