"""Limits that hold: timeouts (even in C code), memory, output, files, crashes, interrupts."""

from __future__ import annotations

import os
import threading
import time

import pytest


@pytest.fixture(scope="module")
def tight(tmp_path_factory):
    from agents.executor import PythonSandbox

    sb = PythonSandbox(workdir=str(tmp_path_factory.mktemp("tight")), timeout_s=2, memory_limit_mb=300,
                       max_output_chars=1000, max_file_size_mb=5, max_files_written=20)
    yield sb
    sb.close()


@pytest.mark.slow
def test_infinite_loop_times_out_and_keeps_state(tight):
    tight.run("kept = 123")
    t0 = time.monotonic()
    r = tight.run("while True:\n    pass")
    assert time.monotonic() - t0 < 6
    assert r.error_type == "TimeoutError" and "timeout_s=2" in r.error
    assert tight.run("kept").output == 123


@pytest.mark.slow
def test_c_level_loop_is_killed_and_state_lost(tight):
    tight.run("kept = 1")
    t0 = time.monotonic()
    r = tight.run("sum(range(10**13))")
    assert time.monotonic() - t0 < 8
    assert r.error_type == "TimeoutError" and r.state_lost
    assert "lost" in r.error
    after = tight.run("kept")
    assert after.error_type == "NameError"
    assert tight.run("1 + 1").output == 2


@pytest.mark.slow
def test_huge_int_is_stopped(tight):
    r = tight.run("x = 7 ** (10 ** 9)")
    assert r.error is not None


@pytest.mark.slow
def test_sleep_times_out(tight):
    r = tight.run("import time\ntime.sleep(30)")
    assert r.error_type == "TimeoutError"


def test_memory_bomb(tight):
    r = tight.run("blocks = []\nwhile True:\n    blocks.append(bytearray(50 * 1024 * 1024))")
    assert r.error is not None
    assert "MemoryError" in r.error or r.error_type in ("WorkerCrashed", "TimeoutError")
    if r.error_type == "MemoryError":
        assert "memory_limit_mb" in r.error
    assert tight.run("del blocks\n2 * 2").output == 4 or tight.run("2 * 2").output == 4


def test_single_huge_allocation(tight):
    r = tight.run("x = ' ' * (10 ** 10)")
    assert r.error_type == "MemoryError" and "memory_limit_mb" in r.error


def test_giant_output_truncated(tight):
    r = tight.run("for i in range(100000):\n    print('line', i)")
    assert len(r.logs) < 2000
    assert "max_output_chars" in r.logs


def test_giant_result_truncated(tight):
    r = tight.run("'x' * 10_000_000")
    assert len(r.output) < 200_000


def test_giant_file(tight):
    r = tight.run("with open('big.bin', 'wb') as f:\n    for _ in range(100):\n        f.write(b'0' * 1024 * 1024)")
    assert r.error is not None and "max_file_size_mb" in r.error
    assert os.path.getsize(os.path.join(tight.workdir, "big.bin")) <= 5 * 1024 * 1024


def test_too_many_files(tight):
    r = tight.run("for i in range(100):\n    open(f'many_{i}.txt', 'w').write('x')")
    assert r.error is not None and "max_files_written" in r.error
    written = [n for n in os.listdir(tight.workdir) if n.startswith("many_")]
    assert len(written) <= 20


def test_fork_bomb(open_sandbox):
    r = open_sandbox.run("import os\nwhile True:\n    os.fork()")
    assert r.error is not None
    assert "Operation not permitted" in r.error or "blocked by the sandbox" in r.error


def test_system_exit_and_keyboard_interrupt_stay_inside(tight):
    for code in ("raise SystemExit(3)", "exit()", "quit()", "raise KeyboardInterrupt"):
        r = tight.run(code)
        assert r.error is not None
    assert tight.run("'alive'").output == "alive"


@pytest.mark.slow  # a crashed worker is replaced (about 2.5 s)
def test_worker_crash_is_reported(open_sandbox):
    r = open_sandbox.run("import ctypes\nctypes.string_at(0)")
    assert r.error is not None
    r = open_sandbox.run("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    assert r.error_type == "WorkerCrashed" and r.state_lost
    assert open_sandbox.run("40 + 2").output == 42


def test_interrupt_from_another_thread(tight):
    tight.run("kept = 'yes'")
    timer = threading.Timer(0.3, tight.interrupt)
    timer.start()
    t0 = time.monotonic()
    r = tight.run("import time\nwhile True:\n    time.sleep(0.01)")
    assert time.monotonic() - t0 < 1.9
    assert r.error_type == "InterruptedError" and "interrupted" in r.error
    assert tight.run("kept").output == "yes"


def test_a_stop_pressed_as_the_code_is_sent_keeps_the_variables(tight):
    """A Stop that lands before the worker has read the run request finds no code running (the worker ignores
    that SIGINT): the app repeats it until the run ends, so the code is interrupted once it starts instead of
    running out the grace and the worker being restarted with its variables. Each round sets the stop flag
    before the run, the widest form of that race."""
    tight.run("kept = 'yes'")
    for _ in range(3):
        cancel = threading.Event()
        cancel.set()
        r = tight.run("import time\ntime.sleep(60)", cancel=cancel)
        assert r.error_type == "InterruptedError" and not r.state_lost, r.error
        assert tight.run("kept").output == "yes"


def test_a_starved_worker_gets_time_to_honour_an_interrupt(tight, monkeypatch):
    """On a loaded machine the worker may not run for a while after SIGINT: it is not killed (its variables
    lost) for a stop it has had no CPU to honour. Simulated by stopping the worker while it is interrupted."""
    import signal

    from agents.executor import run_watch
    from tests.waiting import wait_until

    monkeypatch.setattr(run_watch, "GRACE_S", 0.0)  # without the rule, killed at once
    starved_seen = threading.Event()
    real_starved = run_watch._starved

    def watching(*args):
        starved = real_starved(*args)
        if starved:
            starved_seen.set()
        return starved

    monkeypatch.setattr(run_watch, "_starved", watching)
    tight.run("kept = 'still here'")
    result: list = []
    going = threading.Event()
    runner = threading.Thread(target=lambda: result.append(tight.run("import time\nprint('going', flush=True)\n"
                                                                     "time.sleep(60)", on_log=lambda _t: going.set())))
    runner.start()
    wait_until(going.is_set, what="the code running")
    pid = tight._worker.pid
    os.kill(pid, signal.SIGSTOP)
    tight.interrupt()
    wait_until(starved_seen.is_set, what="the sandbox seeing a worker without CPU")
    os.kill(pid, signal.SIGCONT)
    runner.join(30)
    assert result and result[0].error_type == "InterruptedError" and not result[0].state_lost
    assert tight.run("kept").output == "still here"


@pytest.mark.slow
def test_interrupt_of_c_code_restarts(tight):
    timer = threading.Timer(0.3, tight.interrupt)
    timer.start()
    t0 = time.monotonic()
    r = tight.run("sum(range(10**13))")
    assert time.monotonic() - t0 < 1.9
    assert r.error_type == "InterruptedError" and r.state_lost
