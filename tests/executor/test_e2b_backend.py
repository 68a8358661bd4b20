"""The `e2b` backend end to end: `PythonSandbox` and `CodeAgent` on `E2BBackend`, through the real `e2b` SDK, against
the loopback stand-in of E2B's API whose sandbox processes run in a Docker container of the sandbox image (the
supervisor and the worker for real; E2B's microVM is the only thing stood in for). Skipped without a Docker
Engine (CI has one)."""
from __future__ import annotations

import os
import shlex

import pytest

pytest.importorskip("e2b")

from agents import CodeAgent, ReplayModel, tool
from agents.executor import PythonSandbox
from agents.executor.docker import daemon
from agents.executor.e2b.backend import E2BBackend
from agents.executor.e2b.session import relay_source
from agents.executor.errors import SandboxError, SandboxStartError
from agents.executor.holds import MemoryHolds
from agents.executor.remote.interface import supervisor_command
from tests.executor.e2b_standin import E2BStandIn
from tests.waiting import wait_until

WHY_NOT = daemon.reachable()
if WHY_NOT is not None and os.environ.get("CI"):
    raise RuntimeError(f"CI must reach a Docker Engine for the E2B backend's tests: {WHY_NOT}")
pytestmark = [pytest.mark.docker, pytest.mark.skipif(WHY_NOT is not None, reason=f"no Docker Engine: {WHY_NOT}")]


@pytest.fixture(scope="module")
def runner():
    from tests.executor.e2b_standin_docker import DockerRunner

    return DockerRunner()


@pytest.fixture
def standin(runner):
    service = E2BStandIn(runner=runner)
    yield service
    service.close()


def code(thought: str, source: str) -> str:
    return f"Thought: {thought}\n```python\n{source.strip()}\n```"


def sandbox_on(standin, tmp_path, **kwargs) -> PythonSandbox:
    kwargs.setdefault("timeout_s", 20)
    return PythonSandbox(workdir=str(tmp_path / "ws"), backend=E2BBackend(standin.settings()), **kwargs)


def test_a_code_agent_on_e2b_keeps_variables_calls_tools_and_moves_files(standin, runner, tmp_path):
    asked: list[str] = []

    @tool
    def lookup(name: str) -> str:
        """The app's record of a name (the tool runs in the app, not in the sandbox).

        Args:
            name: Who to look up.
        """
        asked.append(name)
        return f"{name} is 41"

    workdir = tmp_path / "agent"
    workdir.mkdir()
    (workdir / "input.csv").write_text("a,b\n1,2\n")  # an upload: in the app's folder before the run
    model = ReplayModel([
        code("Ask the app and keep it.", "found = lookup(name='ada')\nrows = open('input.csv').read().splitlines()"),
        code("Use what the last step kept.", "value = int(found.split()[-1]) + len(rows) - 1\n"
                                             "open('out.txt', 'w').write(str(value))\nprint(value)"),
        code("Answer.", "final_answer(value)"),
    ])
    agent = CodeAgent(tools=[lookup], model=model, workdir=workdir, max_steps=4, verbosity=0,
                      sandbox=E2BBackend(standin.settings()), executor_timeout_s=30)
    try:
        assert agent.run("What is ada's number plus one?") == 42
        assert asked == ["ada"]  # the tool call crossed the stream to the app
        assert (workdir / "out.txt").read_text() == "42"  # the artifact, copied back into the app's folder
        (sandbox_id,) = standin.sandboxes
        sent = [(path, data) for sid, path, data in standin.files_sent if sid == sandbox_id]
        assert ("/home/user/workspace/input.csv", b"a,b\n1,2\n") in sent  # the upload went by the file API
    finally:
        agent.close()
    assert standin.live() == [] and standin.calls("DELETE", f"/sandboxes/{sandbox_id}")
    wait_until(lambda: not runner.leftover(), what="the sandbox's container to be gone")


def test_the_service_is_asked_for_the_template_no_internet_a_timeout_and_the_session(standin, tmp_path):
    sb = sandbox_on(standin, tmp_path)
    try:
        assert sb.run("1 + 1").output == 2
        (create,) = standin.calls("POST", "/v2/sandboxes")
        assert create[2]["templateID"] == "agentdeck-test" and create[2]["allow_internet_access"] is False
        assert create[2]["timeout"] == 600 and create[2]["metadata"]["session"] == str(tmp_path / "ws")
        (sandbox,) = standin.sandboxes.values()
        (command,) = sandbox.commands
        assert command["user"] == "root" and command["cwd"] == "/home/user/workspace"
        argv = shlex.split(command["args"][-1])
        assert argv[:5] == ["/usr/local/bin/python3", "-I", "-S", "-c", relay_source()]
        assert argv[5:] == supervisor_command(workdir="/home/user/workspace")
    finally:
        sb.close()


def test_files_through_the_host_with_caps(standin, tmp_path):
    sb = sandbox_on(standin, tmp_path)
    try:
        host = sb.host
        host.put_file("data/in.txt", b"hello")
        assert sb.run("open('data/in.txt').read()").output == "hello"
        sb.run("open('made.bin', 'wb').write(b'x' * 5000)")
        assert host.get_file("made.bin") == b"x" * 5000
        from agents.executor.backend import FileTooLarge

        with pytest.raises(FileTooLarge):
            host.get_file("made.bin", max_bytes=4999)
        with pytest.raises(PermissionError):
            host.get_file("../../../etc/passwd")
    finally:
        sb.close()


def test_quota_refused_is_a_clear_start_error(standin, tmp_path):
    standin.refuse_create = 429
    with pytest.raises(SandboxStartError, match="quota") as caught:
        sandbox_on(standin, tmp_path)
    assert "AGENTDECK_MAX_SANDBOXES" in str(caught.value)


@pytest.mark.parametrize("failure", ["gone", "cut"])
def test_a_sandbox_lost_between_steps_tells_the_agent_its_variables_are_gone(standin, tmp_path, failure):
    sb = sandbox_on(standin, tmp_path)
    try:
        sb.run("kept = 1")
        (first,) = standin.sandboxes
        if failure == "gone":
            standin.vanish(first)
        else:
            standin.cut_streams()
        wait_until(lambda: sb.host is None or sb.host.dead, what="the host to see the loss")
        standin.streams_cut = False
        result = sb.run("kept")
        assert result.state_lost, result
        text = result.logs
        assert ("AGENTDECK_E2B_TIMEOUT_S" in text) if failure == "gone" else ("was cut" in text), text
        assert "NameError" in sb.run("kept").error  # a new sandbox: nothing of the old one
        assert len(standin.sandboxes) == 2
    finally:
        sb.close()
    assert standin.live() == []


def test_a_second_backend_reattaches_the_sandbox_by_id_with_its_variables(standin, tmp_path):
    """What another replica does with the id a chat recorded: connect, read the record kept in the sandbox as
    root, take over the supervisor's stream; the worker's variables are still there."""
    sb = sandbox_on(standin, tmp_path)
    try:
        sb.run("kept = 41")
        host_id = sb.host.id
        other = E2BBackend(standin.settings(), holds=MemoryHolds())  # its own lease store: the hold is not tried
        host = other.attach(host_id)
        try:
            assert standin.calls("POST", f"/v2/sandboxes/{host_id}/connect")
            assert host.ready is not None and host.ready["op"] == "ready"
            host.send({"op": "run", "id": "again", "code": "kept + 1", "step": 2, "timeout_s": 10, "stream": False})
            got: list[dict] = []

            def result() -> bool:
                msg = host.read(timeout=1)
                if msg is not None:
                    got.append(msg)
                return bool(got) and got[-1].get("op") == "result"

            wait_until(result, what="the reattached worker's result")
            assert got[-1]["output"] == 42
            record = standin.sandboxes[host_id].local("/root/.agentdeck/host.json")
            assert os.stat(record).st_uid == 0  # the worker's user cannot change what a reattach believes
        finally:
            host.close()
    finally:
        sb.close()
    assert standin.live() == []
    with pytest.raises(SandboxError, match="gone|not found"):
        E2BBackend(standin.settings()).attach(host_id)


def test_suspend_pauses_the_sandbox_and_resume_keeps_the_variables(standin, tmp_path):
    sb = sandbox_on(standin, tmp_path)
    try:
        sb.run("kept = 41")
        host = sb.host
        assert host.suspend() is True
        (sandbox,) = standin.sandboxes.values()
        assert sandbox.state == "paused" and standin.calls("POST", f"/sandboxes/{host.id}/pause")
        host.resume()
        assert sandbox.state == "running"
        result = sb.run("kept + 1")
        assert result.output == 42 and not result.state_lost
    finally:
        sb.close()
