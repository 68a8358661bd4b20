"""`kill -9` of an app whose sandbox worker is stopped between steps: the next start of the app reaps the worker
(it could not notice its app's death while stopped) and logs how many it reaped. Real processes throughout.

The test process makes itself a child subreaper while it runs, as a container's init or systemd is: the killed
app's worker is handed to it, not to pid 1. That is the case an "orphan = parent 1" rule misses, and it keeps the
orphan away from other AgentDeck processes on this machine whose own start-up sweep would reap it first."""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]

APP_WITH_A_SANDBOX = """
import sys
from agents.executor import PythonSandbox
sandbox = PythonSandbox(workdir=sys.argv[1], authorized_imports=[], timeout_s=20)
assert sandbox.run("x = 6 * 7\\nx").output == 42
print(sandbox.host.pid, flush=True)
sys.stdin.read()  # stays until killed
"""

APP_START = """
import sys
from ui.services import Services
from ui.settings import AppConfig
Services.create(AppConfig.from_env(sys.argv[1]))
print("started", flush=True)
"""


def _state(pid: int) -> str | None:
    """The process's state letter (T: stopped, Z: dead, not yet collected), None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0].decode()
    except OSError:
        return None


PR_SET_CHILD_SUBREAPER = 36


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as fh:
        return int(fh.read().rsplit(b")", 1)[1].split()[1])


@contextlib.contextmanager
def _subreaper():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        pytest.skip("prctl(PR_SET_CHILD_SUBREAPER) is not available here")
    try:
        yield
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def _collect(pid: int) -> None:
    """The orphan was handed to this process (the subreaper): collect it once killed, leaving no zombie."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTDECK_")}
    env.update(PYTHONPATH=str(ROOT), AGENTDECK_DATA_DIR=str(tmp_path / "data"), AGENTDECK_MODEL="embedded:smollm2",
               AGENTDECK_SANDBOX="local")
    return env


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_a_restarted_app_reaps_the_stopped_workers_of_the_one_killed(tmp_path: Path) -> None:
    with _subreaper():
        # Any AgentDeck process sweeps at its first sandbox (tests run side by side under xdist): one starting
        # meanwhile may reap the orphan first. Then the scenario runs again; an orphan left alive always fails.
        for attempt in range(3):
            if _kill_and_restart(tmp_path / str(attempt)):
                return
        pytest.fail("three times another process reaped the orphan before the restarted app could")


def _kill_and_restart(tmp_path: Path) -> bool:
    """True when the restarted app reaped the orphan and said so; False when another process had reaped it."""
    tmp_path.mkdir()
    env = _env(tmp_path)
    (tmp_path / "ws").mkdir()
    app = subprocess.Popen([sys.executable, "-c", APP_WITH_A_SANDBOX, str(tmp_path / "ws")], cwd=ROOT, env=env,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    worker = 0
    try:
        assert app.stdout is not None
        worker = int(app.stdout.readline())
        wait_until(lambda: _state(worker) == "T", 20, "the worker to be stopped between steps")
        app.send_signal(signal.SIGKILL)  # kill -9: no atexit, no close
        app.wait(timeout=20)
        # The worker outlives its app, stopped: nothing of it could notice. It was handed to this process.
        if _state(worker) in (None, "Z"):
            return False  # reaped already by another AgentDeck process's sweep
        assert _state(worker) == "T"
        assert _parent(worker) == os.getpid()
        started = subprocess.run([sys.executable, "-c", APP_START, str(tmp_path)], cwd=ROOT, env=env,
                                 capture_output=True, text=True, timeout=300)
        assert started.returncode == 0, started.stderr
        assert "started" in started.stdout
        reaped = "Reaped 1 sandbox worker left stopped by an earlier AgentDeck that was killed." in started.stderr
        wait_until(lambda: _state(worker) in (None, "Z"), 20, "the orphaned worker to be gone")
        return reaped
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
        if worker and _state(worker) not in (None, "Z"):
            os.kill(worker, signal.SIGKILL)
        if worker:
            _collect(worker)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_the_sweep_leaves_the_workers_of_a_live_app_alone(tmp_path: Path) -> None:
    """A second app starting on the same machine must not kill the first one's (stopped) workers."""
    with _subreaper():
        _live_then_dead(tmp_path)


def _live_then_dead(tmp_path: Path) -> None:
    env = _env(tmp_path)
    (tmp_path / "ws").mkdir()
    app = subprocess.Popen([sys.executable, "-c", APP_WITH_A_SANDBOX, str(tmp_path / "ws")], cwd=ROOT, env=env,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert app.stdout is not None
        worker = int(app.stdout.readline())
        wait_until(lambda: _state(worker) == "T", 20, "the worker to be stopped between steps")
        from agents.executor.local.process import sweep_orphans

        assert sweep_orphans(force=True) == 0
        assert _state(worker) == "T"
    finally:
        app.kill()
        app.wait()
    from agents.executor.local.process import sweep_orphans

    assert _parent(worker) == os.getpid()
    assert sweep_orphans(force=True) == 1  # its app gone now: an orphan
    wait_until(lambda: _state(worker) in (None, "Z"), 20, "the orphaned worker to be gone")
    _collect(worker)
