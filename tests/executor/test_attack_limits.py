"""Limits a worker whose code bypassed every Python-level layer cannot defeat: threads left running, CPU and
code between steps, memory, and disk (wherever it writes, deleted files it still holds included).
The sandboxes run with ``python_layers=False``, as in test_attack_kernel.py."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agents.executor import PythonSandbox, artifacts, identity, run_watch, tree_walk
from agents.executor.local import worker_watch
from agents.executor.remote import SupervisedHost
from tests.deep_trees import DEEP_TREE_CODE, make_deep, remove_all
from tests.waiting import wait_until

PROJECT_ROOT = Path(__file__).resolve().parents[2]

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

@pytest.mark.app_side_worker("its state is read here; test_remote_supervisor.py reads it remotely")
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

def test_a_timer_the_code_arms_does_not_end_the_worker_at_the_next_step(tmp_path):
    """The handler was restored after the step, but the interval timer stayed armed: it fired later with the
    default action and the worker died (at once on a remote backend, whose freeze takes a round trip)."""
    with PythonSandbox(str(tmp_path), python_layers=False) as sb:
        r = sb.run("import signal\nsignal.signal(signal.SIGALRM, lambda *a: None)\n"
                   "signal.setitimer(signal.ITIMER_REAL, 0.2)\nkept = 1\n'armed'")
        assert r.output == "armed", r
        # The timer is disarmed once the step ended (nothing is left to fire), and the worker goes on.
        r2 = sb.run("import signal\n(signal.getitimer(signal.ITIMER_REAL), kept + 41)")
        assert r2.output == [[0.0, 0.0], 42] and not r2.state_lost, r2


def test_a_handler_the_code_installs_is_gone_at_the_next_step(tmp_path):
    """The worker compares every handler with its own after each step (one pass) and restores what changed, also
    for code that holds the real `signal` module (every Python-level layer bypassed)."""
    with PythonSandbox(str(tmp_path), python_layers=False) as sb:
        r = sb.run("import signal\nsignal.signal(signal.SIGUSR1, lambda *a: None)\n"
                   "signal.getsignal(signal.SIGUSR1) is signal.SIG_DFL")
        assert r.error is None and r.output is False
        r = sb.run("import signal\nsignal.getsignal(signal.SIGUSR1) is signal.SIG_DFL")
        assert r.error is None and r.output is True


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


@pytest.mark.app_side_worker("its pid is watched here; test_remote_supervisor.py reads it remotely")
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


# ----- trees the code builds: deeper than a path can name, wider than the app's descriptors --------------------
def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_tree_deeper_than_a_path_can_name_counts_against_the_disk_limit(tmp_path):
    """The walk went by path strings and skipped a folder past the system's path limit: 30 MB written 4,000+
    characters down (with os.open and dir_fd, no guard in the way) counted as nothing."""
    with PythonSandbox(str(tmp_path / "ws"), python_layers=False, max_disk_mb=20) as sb:
        r = sb.run(DEEP_TREE_CODE + "deep(45, b'A' * (30 << 20))")
        assert r.error_type == "DiskLimitError" and "max_disk_mb" in r.error, (r.error, r.logs)


def test_folders_count_as_files_and_bytes(tmp_path):
    """Folders counted neither as files nor as bytes: any number of them fitted under max_disk_files."""
    with PythonSandbox(str(tmp_path / "ws"), python_layers=False, max_disk_files=2000) as sb:
        r = sb.run("import os\nfor i in range(3000):\n    os.mkdir(f'd{i}')\n")
        assert r.error_type == "DiskLimitError" and "max_disk_files" in r.error and "folders" in r.error
        if isinstance(sb.host, SupervisedHost):
            return  # the workspace's copy here is only what the app pulled back, not the sandbox's folders
    use = worker_watch.usage([str(tmp_path / "ws")])
    assert use.complete and use.files == 3000 and use.bytes >= 3000 * 4096


def test_the_run_says_which_files_lie_too_deep_to_list_and_lists_the_deep_ones_it_can(tmp_path):
    """The artifact snapshot stopped 12 folders down, and skipped a subtree past the path limit without a word."""
    with PythonSandbox(str(tmp_path / "ws"), python_layers=False) as sb:
        r = sb.run(DEEP_TREE_CODE + "deep(20, b'shallow enough', name='s' * 10)\ndeep(45, b'too deep')")
        assert r.error is None, r.error
        assert [a.path for a in r.artifacts] == ["/".join(["s" * 10] * 20 + ["bottom.bin"])]
        assert "1 file lies deeper in the workspace than a path can name" in r.logs


def test_a_workspace_the_app_cannot_walk_fails_closed(tmp_path, monkeypatch):
    """An error during the walk meant "count 0"; now it means over the limit, with the reason."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("x")
    monkeypatch.setattr(tree_walk.os, "scandir", _failing_scandir)
    why = worker_watch.disk_over([str(ws)], None, max_mb=100, max_files=100)
    assert why is not None and "could not count" in why and "max_disk_mb" in why
    snap = artifacts.snapshot(str(ws))
    assert snap.incomplete and "not all listed" in snap.notes()[0]


def _failing_scandir(*args):
    raise PermissionError(13, "Permission denied")


@pytest.mark.slow  # 25,000 folders are made and walked a few times (about 5 s)
def test_25000_folders_neither_break_the_run_nor_starve_the_apps_descriptors(tmp_path):
    """Handing the workspace to the sandbox's user held a descriptor for every folder it had yet to walk: 1,520
    folders made by ordinary code exhausted the app's descriptors for a moment (another request's open() failed),
    and 25,000 made PythonSandbox.run raise. The app's descriptors are sampled while the next run hands them over."""
    with PythonSandbox(str(tmp_path / "ws"), python_layers=False, max_disk_files=60_000, timeout_s=120) as sb:
        r = sb.run("import os\nfor i in range(25_000):\n    os.mkdir(f'{i:05d}')\n"
                   "os.chdir('00000')\nfor i in range(500):\n    os.mkdir('d')\n    os.chdir('d')\n")
        assert r.error is None, r.error
        fds, peak, done = _open_fds(), 0, threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, _open_fds())

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            r2 = sb.run("'still here'")  # the workspace is handed over again first, and walked twice
        finally:
            done.set()
            sampler.join()
        assert r2.output == "still here" and r2.error is None, r2.error
        if isinstance(sb.host, SupervisedHost):
            # The walks are the supervisor's, in the sandbox; the app's descriptors here are its client's
            # connection pool (it opens and closes them as it likes), and its workspace copy is what it pulled.
            return
        assert _open_fds() == fds and peak <= fds + 16, (fds, peak)
    use = worker_watch.usage([str(tmp_path / "ws")])
    assert use.complete and use.files == 25_500


@pytest.mark.slow  # 100,000 folders, made and walked a few times (about 35 s)
def test_100000_folders_give_a_clear_result_naming_the_limit(tmp_path):
    """Under the default file limit the code is stopped and told why; with a limit above them, every walk
    (hand-over, snapshot, disk count) gets through them and the next run goes on."""
    make = "import os\nfor i in range(100_000):\n    os.mkdir(f'{i:06d}')\n"
    with PythonSandbox(str(tmp_path / "ws"), python_layers=False, timeout_s=120) as sb:
        r = sb.run(make)
        assert r.error_type == "DiskLimitError" and "max_disk_files" in r.error
        r2 = sb.run("'still here'")
        assert r2.output == "still here" and "max_disk_files" in (r2.error or ""), r2.error
    with PythonSandbox(str(tmp_path / "ws2"), python_layers=False, timeout_s=120, max_disk_files=150_000) as sb:
        r = sb.run(make)
        assert r.error is None, r.error
        fds = _open_fds()
        r2 = sb.run("len(os.listdir('.'))")
        remote = isinstance(sb.host, SupervisedHost)  # see the 25,000 folders: the app's descriptors are its client's
        assert r2.output == 100_000 and r2.error is None and (remote or _open_fds() == fds), r2.error


def test_links_fifos_sockets_and_long_names_do_not_break_the_handover(tmp_path):
    """What the worker leaves for the app's walks: a fifo (an open that would wait forever), a link to /etc (to
    be followed), a hard link, a socket, names of 255 characters. The next run goes on as usual."""
    with PythonSandbox(str(tmp_path / "ws"), python_layers=False) as sb:
        r = sb.run("import os, socket\nopen('a', 'w').write('a')\n"
                   "made = []\n"
                   "for name, make in [('fifo', lambda: os.mkfifo('fifo')),\n"
                   "                   ('etc', lambda: os.symlink('/etc', 'etc')),\n"
                   "                   ('b', lambda: os.link('a', 'b')), ('n' * 255, lambda: os.mkdir('n' * 255)),\n"
                   "                   ('sock', lambda: socket.socket(socket.AF_UNIX).bind('sock'))]:\n"
                   "    try:\n        make()\n        made.append(name)\n    except OSError:\n        pass\n"
                   "open(os.path.join('n' * 255, 'm' * 255), 'w').write('x')\nmade")
        assert r.error is None and {"b", "n" * 255} <= set(r.output), (r.error, r.logs)  # the rest: Landlock
        r2 = sb.run("sorted(os.listdir('.'))")
        assert r2.error is None and set(r.output) <= set(r2.output), r2.error
        assert [a.path for a in r.artifacts] == ["a", "b", "n" * 255 + "/" + "m" * 255]
    assert os.stat("/etc").st_uid == 0


def test_handing_over_and_walking_a_deep_tree_holds_a_few_descriptors(tmp_path):
    """Under a limit of 16 descriptors in all, the hand-over to the sandbox's user, the disk count, the artifact
    snapshot and the rebuild's listing all get through 3,000 nested folders (before: one descriptor per folder)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    make_deep(str(ws), 3000, b"bottom", name="d")
    script = (
        "import os, resource, sys\n"
        "from pathlib import Path\n"
        "from agents.executor import artifacts, identity\n"
        "from agents.executor.local import worker_watch\n"
        "from agents.loop.restore import workspace_entries\n"
        "from tests.deep_trees import read_deep\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))\n"
        f"ws = {str(ws)!r}\n"
        "uid = os.getuid() if os.geteuid() else 45678\n"
        "assert identity.give_tree(ws, uid) is None\n"
        "use = worker_watch.usage([ws])\n"
        "assert use.complete and use.files == 3001, use\n"
        "assert len(artifacts.snapshot(ws).files) == 0 and artifacts.snapshot(ws).too_deep == 1\n"
        "workspace_entries(Path(ws))\n"
        "names = ['d'] * 3000 + ['bottom.bin']\n"
        "fd = os.open(ws, os.O_RDONLY)\n"
        "for name in names[:-1]:\n"
        "    child = os.open(name, os.O_RDONLY, dir_fd=fd); os.close(fd); fd = child\n"
        "print(os.stat(names[-1], dir_fd=fd).st_uid == uid)\n"
    )
    try:
        done = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True,
                              timeout=120)
    finally:
        remove_all(str(ws))
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr[-2000:]


@pytest.mark.skipif(os.geteuid() != 0, reason="the hand-over changes owners as root")
def test_the_handover_changes_no_owner_outside_and_waits_on_no_fifo(tmp_path):
    """What a worker that got past Landlock could leave: a fifo (an open that would wait), a link to a file
    outside, a hard link to one, a socket, each deep down. Only the workspace's own entries change owner."""
    ws, outside = tmp_path / "ws", tmp_path / "outside.txt"
    outside.write_text("the app's")
    names = make_deep(str(ws.parent), 50, b"", name="w" * 80)[:-1]
    os.rename(tmp_path / names[0], ws)
    fd = os.open(ws, os.O_RDONLY)
    for name in names[1:]:
        child = os.open(name, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = child
    try:
        os.mkfifo("fifo", dir_fd=fd)
        os.symlink(str(outside), "link", dir_fd=fd)
        os.link(str(outside), "hard", dst_dir_fd=fd)
        assert identity.give_tree(str(ws), 45678) is None
        assert os.stat("fifo", dir_fd=fd).st_uid == 45678 and os.fstat(fd).st_uid == 45678
        assert os.stat("link", dir_fd=fd, follow_symlinks=False).st_uid == 0  # links are left as they are
        assert outside.stat().st_uid == 0 and outside.read_text() == "the app's"
    finally:
        os.close(fd)


def test_the_security_report_says_how_a_file_kept_only_mapped_is_counted(tmp_path):
    """Without CAP_SYS_ADMIN a remote sandbox's supervisor cannot size a deleted file kept only mapped: its report
    says the limit then fails closed (test_mapped_deleted_files_count_against_the_disk_limit is the attack)."""
    with PythonSandbox(str(tmp_path), python_layers=False) as sb:
        sb.run("1")
        detail = sb.security_report()["disk_limit"]["detail"]
        if not isinstance(sb.host, SupervisedHost):
            pytest.skip("the app sizes a local worker's mapped files itself")
    assert "mapped" in detail and "fails the limit closed" in detail, detail
