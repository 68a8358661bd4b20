"""The E2B backend's own parts through the real `e2b` SDK against the loopback stand-in of E2B's API: the
requests it makes, the supervisor's stream (binary-exact through the relay), the files with caps, pause and
resume, attach from a second backend, close, and each failure's message."""
from __future__ import annotations

import os
import shlex
import sys

import pytest

pytest.importorskip("e2b")

from agents.executor import backends
from agents.executor.backend import FileTooLarge
from agents.executor.e2b.backend import E2BBackend
from agents.executor.e2b.session import E2BSession, relay_source
from agents.executor.e2b.settings import E2BSettings
from agents.executor.e2b.stream import CommandStream, StreamClosed
from agents.executor.errors import SandboxError, SandboxStartError
from tests.executor.e2b_standin import E2BStandIn
from tests.waiting import wait_until

ECHO = "python3 -m agents.executor.e2b.relay cat"  # the relay around an echo: what goes in comes back


@pytest.fixture
def standin():
    service = E2BStandIn()
    yield service
    service.close()


def read_exactly(stream: CommandStream, count: int, timeout: float = 20) -> bytes:
    data = bytearray()

    def more() -> bool:
        chunk = stream.read(count - len(data), timeout=1)
        assert chunk != b"", f"the stream ended after {len(data)} bytes: {stream.ended} {stream.stderr_tail}"
        data.extend(chunk or b"")
        return len(data) >= count

    wait_until(more, timeout=timeout, what=f"{count} bytes from the stream", poll_s=0)
    return bytes(data)


def started(standin: E2BStandIn, **changes) -> E2BSession:
    session = E2BSession.create(standin.settings(command=ECHO, **changes), session_name="/chats/abc/workspace")
    session.start_supervisor()
    return session


def test_create_asks_for_template_no_internet_timeout_and_metadata(standin):
    session = started(standin, template="team/agentdeck:v3", timeout_s=900)
    try:
        (create,) = standin.calls("POST", "/v2/sandboxes")
        body, headers = create[2], create[3]
        assert body["templateID"] == "team/agentdeck:v3"
        assert body["allow_internet_access"] is False
        assert body["timeout"] == 900
        assert body["metadata"] == {"agentdeck": "1", "session": "/chats/abc/workspace"}
        assert headers["x-api-key"] == standin.settings().api_key
        (command,) = standin.sandboxes[session.id].commands
        assert command["stdin"] is True and command["cwd"] == "/home/user/workspace" and command["user"] == "root"
        assert ECHO in command["args"][-1]
    finally:
        session.close()


def test_stream_carries_every_byte_value_both_ways(standin):
    session = started(standin)
    try:
        payload = bytes(range(256)) * 300 + b"\n\r\x00end"  # binary, longer than one relay line
        session.stream.write(payload, timeout=10)
        assert read_exactly(session.stream, len(payload)) == payload
        assert standin.sandboxes[session.id].processes[session.stream.pid].stdin_bytes == len(payload)
    finally:
        session.close()


def test_close_kills_the_sandbox_and_its_process(standin):
    session = started(standin)
    proc = standin.sandboxes[session.id].processes[session.stream.pid]
    session.close()
    assert standin.calls("DELETE", f"/sandboxes/{session.id}")
    assert standin.live() == []
    wait_until(lambda: proc.popen.poll() is not None, what="the sandbox's process to end")
    session.close()  # idempotent


def test_files_put_get_list_remove_with_caps(standin):
    session = started(standin)
    files = session.files
    try:
        files.put("data/in.csv", b"a,b\n1,2\n")
        assert (session.id, "/home/user/workspace/data/in.csv", b"a,b\n1,2\n") in standin.files_sent
        assert files.get("data/in.csv") == b"a,b\n1,2\n"
        listed = files.list()
        assert set(listed) == {"data/in.csv"} and listed["data/in.csv"].size == 8
        with pytest.raises(FileTooLarge):
            files.put("big.bin", b"x" * 101, max_bytes=100)
        files.put("big.bin", b"x" * 100, max_bytes=100)
        with pytest.raises(FileTooLarge):
            files.get("big.bin", max_bytes=99)
        with pytest.raises(FileExistsError):
            files.put("big.bin", b"y", exclusive=True)
        files.remove("big.bin")
        assert "/home/user/workspace/big.bin" in standin.sandboxes[session.id].removed
        with pytest.raises(FileNotFoundError):
            files.get("big.bin")
    finally:
        session.close()


def test_files_refuse_paths_out_of_the_workspace_and_links(standin):
    session = started(standin)
    sandbox = standin.sandboxes[session.id]
    secret = sandbox.local("/home/user/secret.txt")
    with open(secret, "w") as fh:
        fh.write("not the workspace's")
    workspace = sandbox.local("/home/user/workspace")
    os.symlink(secret, os.path.join(workspace, "link.txt"))  # what code in the sandbox could leave
    os.symlink(os.path.dirname(secret), os.path.join(workspace, "up"))
    try:
        for bad in ("../secret.txt", "/etc/passwd", "a/../../secret.txt", ""):
            with pytest.raises(PermissionError):
                session.files.get(bad)
        with pytest.raises(PermissionError):
            session.files.get("link.txt")
        with pytest.raises(PermissionError):
            session.files.get("up/secret.txt")
        with pytest.raises(PermissionError):
            session.files.put("up/secret.txt", b"overwritten")
        with pytest.raises(PermissionError):
            session.files.remove("link.txt")
        assert open(secret).read() == "not the workspace's"
        assert "link.txt" not in session.files.list()
    finally:
        session.close()


def test_quota_refused_names_what_to_change(standin):
    standin.refuse_create = 429
    with pytest.raises(SandboxStartError, match="quota") as caught:
        E2BSession.create(standin.settings(command=ECHO), session_name="s")
    assert "AGENTDECK_MAX_SANDBOXES" in str(caught.value)
    assert standin.live() == []


def test_wrong_key_names_the_setting(standin):
    with pytest.raises(SandboxStartError, match="E2B_API_KEY"):
        E2BSession.create(standin.settings(api_key="e2b_wrong"), session_name="s")


def test_sandbox_gone_mid_run_ends_the_stream_saying_so(standin):
    session = started(standin)
    try:
        standin.vanish(session.id)
        wait_until(lambda: session.stream.ended is not None, what="the stream to end")
        with pytest.raises(StreamClosed, match="AGENTDECK_E2B_TIMEOUT_S"):
            session.stream.read(10, timeout=5)
        assert "gone" in session.stream.ended
        with pytest.raises(StreamClosed):
            session.stream.write(b"more", timeout=5)
    finally:
        session.close()


def test_stream_cut_ends_the_stream(standin):
    session = started(standin)
    try:
        standin.cut_streams()
        wait_until(lambda: session.stream.ended is not None, what="the stream to end")
        with pytest.raises(StreamClosed, match="was cut"):
            session.stream.read(10, timeout=5)
    finally:
        session.close()


def test_pause_stops_the_processes_and_resume_continues(standin):
    session = started(standin)
    try:
        assert session.pause() is True
        assert standin.sandboxes[session.id].state == "paused"
        session.resume()
        assert standin.sandboxes[session.id].state == "running"
        session.stream.write(b"after resume", timeout=10)
        assert read_exactly(session.stream, 12) == b"after resume"
    finally:
        session.close()


def test_second_backend_reattaches_by_id(standin):
    session = started(standin)
    try:
        other = E2BSession.connect(standin.settings(command=ECHO), session.id)
        stream = other.reattach_supervisor()
        assert standin.calls("POST", f"/v2/sandboxes/{session.id}/connect")
        stream.write(b"from the other replica", timeout=10)
        assert read_exactly(stream, 22) == b"from the other replica"
        wait_until(lambda: session.stream.ended is not None, what="the first replica's stream to be cut")
        stream.close()
    finally:
        session.close()
    with pytest.raises(SandboxError, match="gone|not found"):
        E2BSession.connect(standin.settings(command=ECHO), session.id)


def test_unavailable_reason_names_the_missing_setting():
    assert "E2B_API_KEY" in E2BBackend(E2BSettings(template="t")).unavailable_reason()
    assert "AGENTDECK_E2B_TEMPLATE" in E2BBackend(E2BSettings(api_key="k")).unavailable_reason()
    assert E2BBackend(E2BSettings(template="t", api_key="k")).unavailable_reason() is None
    assert "not configured" in E2BBackend().unavailable_reason()


def test_known_lists_every_backend_with_what_it_needs():
    table = {info.name: info for info in backends.known()}
    assert set(table) == set(backends.names()) and "e2b" in table
    assert "E2B_API_KEY" in table["e2b"].needs and "AGENTDECK_E2B_TEMPLATE" in table["e2b"].needs
    assert table["local"].unavailable is None or sys.platform != "linux"
    assert "e2b" not in backends.available()  # not configured on this machine


def test_messages_of_gone_and_cut_differ(standin):
    gone, cut = started(standin), started(standin)
    try:
        standin.vanish(gone.id)
        wait_until(lambda: gone.stream.ended is not None, what="the gone sandbox's stream to end")
        assert "AGENTDECK_E2B_TIMEOUT_S" in gone.stream.ended
        standin.cut_streams()
        wait_until(lambda: cut.stream.ended is not None, what="the cut stream to end")
        assert "gone" not in cut.stream.ended and "connection to the E2B sandbox was cut" in cut.stream.ended
    finally:
        gone.close()
        cut.close()


@pytest.fixture(scope="module")
def docker_runner():
    from agents.executor.docker import daemon

    why = daemon.reachable()
    if why is not None:
        pytest.skip(f"no Docker engine: {why}")
    from tests.executor.e2b_standin_docker import DockerRunner

    return DockerRunner()


def test_relay_runs_in_the_sandbox_image_and_pause_stops_the_container(docker_runner):
    """The relay as the backend starts it (its source with -c, the image's Python, no `agents` package there),
    around an echo, in a container standing in for the microVM; files bound into it; pause and resume."""
    service = E2BStandIn(runner=docker_runner)
    try:
        python = "/usr/local/bin/python3"
        echo = [python, "-I", "-S", "-c", "import os\nwhile d := os.read(0, 65536): os.write(1, d)"]  # no cat there
        command = shlex.join([python, "-I", "-S", "-c", relay_source(), *echo])
        session = E2BSession.create(service.settings(command=command, python=python), session_name="docker")
        session.start_supervisor()
        session.stream.write(bytes(range(256)), timeout=30)
        assert read_exactly(session.stream, 256, timeout=60) == bytes(range(256))
        session.files.put("note.txt", b"from the app")
        assert session.files.get("note.txt") == b"from the app"
        assert session.pause() is True
        session.resume()
        session.stream.write(b"again", timeout=10)
        assert read_exactly(session.stream, 5) == b"again"
        session.close()
        wait_until(lambda: not docker_runner.leftover(), what="the stand-in's containers to be removed")
    finally:
        service.close()


def test_the_apps_settings_configure_the_backend(monkeypatch):
    """AGENTDECK_E2B_* and E2B's own E2B_API_KEY reach the backend through `configure_host`, never read by the
    library itself; without the key the start check names it."""
    from agents.host_settings import configure_host, host_settings
    from ui.config.app_settings import load_settings
    from ui.config.apply import apply_to_libraries

    before = host_settings()
    monkeypatch.setenv("AGENTDECK_E2B_TEMPLATE", "team/agentdeck")
    monkeypatch.setenv("AGENTDECK_E2B_TIMEOUT_S", "900")
    monkeypatch.delenv("E2B_API_KEY", raising=False)
    try:
        apply_to_libraries(load_settings())
        assert host_settings().e2b == E2BSettings(template="team/agentdeck", timeout_s=900)
        assert "E2B_API_KEY" in backends.get("e2b").unavailable_reason()
        monkeypatch.setenv("E2B_API_KEY", "e2b_key")
        apply_to_libraries(load_settings())
        assert host_settings().e2b.api_key == "e2b_key" and backends.get("e2b").unavailable_reason() is None
    finally:
        configure_host(**{f: getattr(before, f) for f in before.__dataclass_fields__})
