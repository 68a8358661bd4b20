"""The app treats the worker as hostile: what a worker whose code bypassed every Python-level layer sends
(forged, oversized, garbage or endless frames; a thread stealing commands) never reaches the app as trusted.
The sandboxes run with ``python_layers=False``, as in test_attack_kernel.py."""

from __future__ import annotations

import os
import sys

import pytest

from agents.executor import PythonSandbox

# Each test runs once per usable sandbox backend (conftest.py: sandbox_backend).
pytestmark = [pytest.mark.skipif(sys.platform != "linux", reason="Linux confinement"),
              pytest.mark.usefixtures("sandbox_backend")]

FIND_RUN = ("import gc, json, os, sys\n"
            "run = [o for o in gc.get_objects() if type(o).__name__ == 'Executor'][0].run_id\n")


def sending(frame: str, times: int = 1) -> str:
    """Worker code that writes the frame `frame` (a Python dict expression; `run` is the current run id, read
    from the worker's memory as a bypass could) onto the result channel `times` times."""
    return (FIND_RUN + f"data = json.dumps({frame}).encode()\n"
            f"for _ in range({times}):\n    os.write(int(sys.argv[3]), len(data).to_bytes(4, 'big') + data)\n")


@pytest.fixture(scope="module")
def bare(sandbox_backend, tmp_path_factory):
    """A sandbox without the Python layers, shared by the module (each test leaves it usable)."""
    box = PythonSandbox(str(tmp_path_factory.mktemp("channel")), python_layers=False)
    yield box
    box.close()


def test_forged_result_frames_are_not_trusted(bare):
    sb = bare
    sb.run("stamp = 'alive'")
    r = sb.run(sending("{'op': 'result', 'id': 'not-this-run', 'output': 'forged', 'is_final': True}") + "'real'")
    assert r.untrusted and r.state_lost and r.error_type == "SandboxProtocolError"
    assert r.output != "forged"
    assert sb.run("'stamp' in dir()").output is False  # the tampered worker was replaced
    assert sb.run("1 + 1").output == 2

@pytest.mark.slow
def test_garbage_on_the_channel_restarts_the_worker(bare):
    sb = bare
    r = sb.run("import os, sys\nos.write(int(sys.argv[3]), b'\\xff\\xff\\xff\\xffgarbage')")  # read before the result
    assert r.state_lost and r.untrusted and r.error is not None
    assert sb.run("2 + 2").output == 4

MALFORMED = {
    "a 4 GiB length": "b'\\xff\\xff\\xff\\xff'",
    "bad UTF-8": "len(b'\\xff\\xfe{}').to_bytes(4, 'big') + b'\\xff\\xfe{}'",
    "nesting too deep": "(20000).to_bytes(4, 'big') + b'[' * 10000 + b']' * 10000",
    "a non-object frame": "(6).to_bytes(4, 'big') + b'[1, 2]'",
    "not JSON": "(6).to_bytes(4, 'big') + b'{\"op\":'",
}


@pytest.mark.parametrize("what", sorted(MALFORMED))
def test_a_frame_that_breaks_the_protocol_is_untrusted_not_a_crash(bare, what):
    """A frame no honest worker writes is the code tampering with the channel: the result is marked untrusted
    (not a crash), the worker is replaced, and the run's output is not believed."""
    sb = bare
    sb.run("stamp = 'alive'")
    r = sb.run(f"import os, sys\nos.write(int(sys.argv[3]), {MALFORMED[what]})\n'real'")
    assert r.untrusted and r.state_lost and r.error_type == "SandboxProtocolError", (what, r)
    assert r.output is None
    assert sb.run("'stamp' in dir()").output is False  # the tampered worker was replaced
    assert sb.run("1 + 1").output == 2


def test_a_frame_of_an_unknown_type_is_untrusted(bare):
    sb = bare
    r = sb.run(sending("{'op': 'shell', 'id': run, 'cmd': 'rm -rf /'}") + "'real'")
    assert r.untrusted and r.state_lost and r.error_type == "SandboxProtocolError", r
    assert sb.run("1 + 1").output == 2


def test_result_limits_are_enforced_by_the_app(tmp_path):
    with PythonSandbox(str(tmp_path), python_layers=False, max_result_chars=1000, max_output_chars=1000) as sb:
        r = sb.run(sending("{'op': 'result', 'id': run, 'output': 'x' * 5_000_000, 'logs': 'y' * 5_000_000, "
                           "'error': None, 'output_type': 'str' * 1000}"))
        assert isinstance(r.output, str) and len(r.output) < 1200
        assert len(r.logs) < 2000 and len(r.output_type) <= 100
        # The real result then arrives after the app took the forged one: the next run notices (a frame that
        # belongs to no current run), distrusts the worker and starts afresh.
        r2 = sb.run("1")
        assert r2.state_lost and (r2.output == 1 or r2.untrusted)
        assert sb.run("2").output == 2

def test_a_worker_flooding_output_past_its_limit_is_cut_off(tmp_path):
    """Each log frame costs the app a parse: past the output limit, a worker that keeps sending is stopped."""
    with PythonSandbox(str(tmp_path), python_layers=False, max_output_chars=1000, timeout_s=20) as sb:
        r = sb.run(sending("{'op': 'log', 'id': run, 'text': 'x' * 100000}", times=100) + "'still running'")
        assert r.untrusted and r.state_lost and "past its limit" in (r.error or ""), r
        assert len(r.logs) <= 1000 + 1000  # what was kept stays within the limit (plus the note's room)
        assert sb.run("1 + 1").output == 2

@pytest.mark.slow
def test_hostile_frames_cannot_blow_up_or_crash_the_app(tmp_path):
    with PythonSandbox(str(tmp_path), python_layers=False) as sb:
        for payload in ("b'[' * 200000 + b']' * 200000", "b'[' + b'[],' * 3000000 + b'[]]'"):
            r = sb.run(f"import os, sys\ndata = {payload}\n"
                       "os.write(int(sys.argv[3]), len(data).to_bytes(4, 'big') + data)")
            assert r.state_lost and r.untrusted and r.error is not None
        assert sb.run("6 * 7").output == 42

def test_a_worker_that_stops_reading_cannot_hang_the_app(tmp_path):
    import time

    with PythonSandbox(str(tmp_path), python_layers=False, timeout_s=5) as sb:
        sb.run("import fcntl, sys, threading\nfcntl.fcntl(int(sys.argv[2]), 1031, 4096)")
        started = time.monotonic()
        r = sb.run("x = '" + "y" * 20000 + "'\nlen(x)")
        assert time.monotonic() - started < 30
        assert r.output == 20000 or r.state_lost

def test_native_thread_that_steals_commands_is_stopped(tmp_path):
    """A thread blocked reading the command pipe (invisible to threading) is found in the kernel's view."""
    with PythonSandbox(str(tmp_path), python_layers=False) as sb:
        r = sb.run(
            "import _thread, os, sys\n"
            "fd = int(sys.argv[2])\n"
            "reading = _thread.allocate_lock()\nreading.acquire()\n"
            "def steal():\n    reading.release()\n    os.read(fd, 1 << 20)\n"
            "_thread.start_new_thread(steal, ())\nreading.acquire()\n'planted'"
        )
        assert r.state_lost
        r2 = sb.run("open('approved.txt', 'w').write('ran')\n'done'")
        assert r2.output == "done"
        assert (tmp_path / "approved.txt").read_text() == "ran"

@pytest.mark.app_side_worker("its descriptors are read here; the supervisor makes the log in the sandbox's temp")
def test_the_workers_output_goes_to_a_file_of_its_own(tmp_path):
    """stdout/stderr were a log in the app's folder, owned by the app's user: a non-root app's worker could
    chmod, truncate or tag it. Now the log lives in the worker's temp folder, counted like its other files."""
    with PythonSandbox(str(tmp_path / "ws"), python_layers=False) as sb:
        # A worker may connect before it has moved its output to the log (Docker's does): ready once it ran a step.
        assert sb.run("1").error is None
        pid = sb._worker.pid
        targets = {os.readlink(f"/proc/{pid}/fd/{n}") for n in (1, 2)}
        assert len(targets) == 1 and next(iter(targets)).startswith(sb._tmpdir + os.sep), targets
        r = sb.run("import os\nos.write(2, b'x' * 3000)\n'ok'")
        assert r.output == "ok", r.error
        assert os.path.getsize(next(iter(targets))) >= 3000
