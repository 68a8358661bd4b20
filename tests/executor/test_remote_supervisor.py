"""The supervised remote sandbox for real: the supervisor and the worker in a Docker container standing in for a
pod or microVM (`remote_container.py`: no network, read-only root, capabilities dropped but the supervisor's),
the app reaching them only through the container's stdin/stdout and the engine's archive API.

What a session needs: variables kept, tool calls served by the app, files both ways, the worker frozen between
steps, a thread left running caught, the timeout, the disk limit, a cut stream reported as lost variables and
nothing left running. And the split of trust: the worker cannot signal, trace or become its supervisor.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from agents.executor import PythonSandbox
from tests.executor.remote_container import PYTHON, SupervisedDockerBackend, docker_ready
from tests.waiting import wait_until

pytestmark = [pytest.mark.skipif(sys.platform != "linux", reason="Linux confinement"),
              pytest.mark.skipif(docker_ready() is not None, reason=f"Docker: {docker_ready()}")]


@pytest.fixture(scope="module")
def backend():
    return SupervisedDockerBackend()


@pytest.fixture(scope="module")
def bare(backend, tmp_path_factory):
    """python_layers=False: the code holds the real os and ctypes, as code past every Python-level layer."""
    sb = PythonSandbox(str(tmp_path_factory.mktemp("bare")), authorized_imports=["*"], python_layers=False,
                       timeout_s=20, backend=backend)
    yield sb
    sb.close()


def _in_container(sb: PythonSandbox, code: str) -> str:
    """Run `code` beside the worker as the container's root (the test's look from outside the worker)."""
    container = sb.host._files.container  # type: ignore[union-attr]
    exit_code, out = container.exec_run([PYTHON, "-I", "-S", "-c", code])
    assert exit_code == 0, out
    return out.decode().strip()


def test_a_session_keeps_variables_serves_tools_and_moves_files(backend, tmp_path):
    app_pid = os.getpid()
    calls: list[tuple[int, int]] = []

    def lookup(n: int) -> int:
        calls.append((n, os.getpid()))
        return n * 2

    (tmp_path / "data.txt").write_text("from the app")
    sb = PythonSandbox(str(tmp_path), authorized_imports=["numpy"], timeout_s=20, backend=backend)
    try:
        sb.register_tools({"lookup": lookup})
        first = sb.run("x = lookup(20) + 2\ntext = open('data.txt').read()\n"
                       "open('out.txt', 'w').write(text.upper())\nx")
        assert first.error is None, first.error
        assert first.output == 42 and calls == [(20, app_pid)]  # the tool ran in the app's process
        assert [a.path for a in first.artifacts] == ["out.txt"]
        assert (tmp_path / "out.txt").read_text() == "FROM THE APP"  # pulled into the app's copy
        second = sb.run("x + len(text)")
        assert second.output == 54 and not second.state_lost
        report = sb.security_report()
        for layer in ("landlock", "seccomp", "filesystem_view", "freeze_between_steps", "thread_check", "supervisor"):
            assert report[layer]["active"], (layer, report[layer])
        containers = list(backend.containers)
    finally:
        sb.close()
    import docker.errors

    for container in containers:  # nothing left behind
        with pytest.raises(docker.errors.NotFound):
            container.reload()


def test_the_worker_cannot_signal_trace_or_become_its_supervisor(bare):
    result = bare.run(r'''
import os, ctypes, json, signal
out = {"uid": os.getresuid(), "parent": os.getppid()}
def attempt(name, fn):
    try:
        out[name] = "SUCCEEDED " + repr(fn())
    except BaseException as exc:
        out[name] = "blocked " + type(exc).__name__
libc = ctypes.CDLL(None, use_errno=True)
def ptrace():
    if libc.ptrace(16, os.getppid(), 0, 0) != 0:  # PTRACE_ATTACH
        raise OSError(ctypes.get_errno(), "ptrace")
for sig in (signal.SIGSTOP, signal.SIGKILL, signal.SIGTERM):
    attempt(f"kill-parent-{sig.name}", lambda s=sig: os.kill(os.getppid(), s))
    attempt(f"kill-1-{sig.name}", lambda s=sig: os.kill(1, s))
    attempt(f"kill-all-{sig.name}", lambda s=sig: os.kill(-1, s))
attempt("ptrace-parent", ptrace)
attempt("setuid-0", lambda: os.setuid(0))
attempt("read-parent-environ", lambda: open(f"/proc/{os.getppid()}/environ", "rb").read())
attempt("read-parent-mem", lambda: open(f"/proc/{os.getppid()}/mem", "rb").read(1))
json.dumps(out)
''')
    assert result.error is None, result.error
    out = json.loads(result.output)
    assert out["uid"] == [1000, 1000, 1000]
    succeeded = {k: v for k, v in out.items() if isinstance(v, str) and v.startswith("SUCCEEDED")}
    assert not succeeded
    assert bare.run("1 + 1").output == 2  # the supervisor still answers
    supervisor = _in_container(bare, f"print(open('/proc/{out['parent']}/status').read().split('Uid:')[1].split()[0])")
    assert supervisor == "0"  # the supervisor's user id, not the worker's


def test_the_worker_is_frozen_between_steps(bare):
    pid = bare.run("import os\nos.getpid()").output
    state = _in_container(bare, f"print(open('/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[0])")
    assert state == "T"
    assert bare.host.woke_up() is False


def test_a_worker_woken_between_steps_is_replaced(bare):
    """Something other than the app's thaw continues the frozen worker (here the sandbox's root): the next step
    finds it running and replaces it, as on the local backend."""
    pid = bare.run("import os\nstamp = 1\nos.getpid()").output
    _in_container(bare, f"import os, signal\nos.kill({pid}, signal.SIGCONT)")
    wait_until(lambda: _in_container(bare, f"print(open('/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[0])")
               != "T", 10, "the worker to run again")
    result = bare.run("stamp")
    assert result.state_lost and "woke the sandbox up between steps" in result.logs, result


def test_cpu_time_is_read_from_outside_the_worker(bare):
    before = bare.host.cpu_seconds()
    bare.run("import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass")
    assert bare.host.cpu_seconds() - before >= 0.5


def test_a_thread_left_running_is_caught(bare):
    bare.run("kept = 1")
    result = bare.run("import threading\n"
                      "threading.Thread(target=lambda: [0 for _ in iter(int, 1)], daemon=True).start()")
    assert result.state_lost and "thread it started was still running" in result.logs
    assert bare.run("kept").error is not None  # the variables went with the restarted worker


def test_the_timeout_interrupts_and_keeps_variables(backend, tmp_path):
    sb = PythonSandbox(str(tmp_path), timeout_s=2, backend=backend)
    try:
        assert sb.run("y = 7").error is None
        result = sb.run("while True:\n    pass")
        assert "TimeoutError" in (result.error or "") and not result.state_lost, result.error
        assert sb.run("y").output == 7
    finally:
        sb.close()


def test_the_disk_limit_is_counted_by_the_supervisor(backend, tmp_path):
    sb = PythonSandbox(str(tmp_path), timeout_s=20, max_disk_mb=4, backend=backend)
    try:
        result = sb.run("open('big.bin', 'wb').write(b'x' * 6 * 1024 * 1024)")
        assert result.error_type == "DiskLimitError" or "DiskLimitError" in (result.error or ""), result
        assert "max_disk_mb" in result.error
    finally:
        sb.close()


def test_a_cut_stream_loses_the_variables_and_leaves_nothing_running(backend, tmp_path):
    sb = PythonSandbox(str(tmp_path), timeout_s=20, backend=backend)
    try:
        assert sb.run("z = 5").error is None
        host = sb.host
        container = host._files.container  # type: ignore[union-attr]
        host._link._stream.close()  # type: ignore[union-attr]  # the network between app and sandbox is cut

        def exited() -> bool:
            container.reload()
            return container.status == "exited"

        wait_until(exited, timeout=30, what="the supervisor to end the worker and exit when its stdin ended")
        result = sb.run("z")
        assert result.state_lost or "NameError" in (result.error or ""), result
        assert "gone" in result.logs or "lost" in result.logs or "NameError" in (result.error or "")
        assert sb.run("1 + 2").output == 3  # a new sandbox
    finally:
        sb.close()


def test_a_stream_cut_before_the_disk_count_fails_closed(backend, tmp_path):
    """The files a run left are counted by the supervisor after the app has downloaded them (60 s for 400 files
    on a loaded machine): a stream that drops in between leaves them uncounted. The run went through clean, with
    its variables said to be kept (its code had made 10 files over max_disk_files=5); it must say that the files
    count as over the limits and that the sandbox, and its variables, are gone."""
    sb = PythonSandbox(str(tmp_path), timeout_s=20, max_disk_files=5, backend=backend)
    try:
        assert sb.run("kept = 1").error is None
        host = sb.host
        pull = host.pull_workspace

        def cut_then_pull() -> None:
            host._link._stream.close()  # type: ignore[union-attr]  # the network between app and sandbox drops
            wait_until(lambda: host._link.failure is not None, what="the app to see the stream end")
            pull()

        host.pull_workspace = cut_then_pull  # type: ignore[method-assign]
        result = sb.run("for i in range(10):\n    open(f's{i}', 'w').close()")
        assert result.error_type == "DiskLimitError" and "max_disk_files" in (result.error or ""), result
        assert result.state_lost, result
        assert sb.run("1 + 2").output == 3  # a new sandbox
    finally:
        sb.close()


def test_the_apps_orphan_sweep_leaves_a_containers_workers_alone(bare):
    """A worker in another pid namespace names its supervisor's pid of that namespace: the app's sweep of
    orphaned local workers (run at every local start, by any AgentDeck process on the machine) must not take it
    for an orphan. It did, killing remote workers whenever a local sandbox started elsewhere."""
    from agents.executor.local.process import sweep_orphans

    assert bare.run("kept = 3").error is None
    sweep_orphans(force=True)
    assert bare.run("kept").output == 3
