"""Attack on the supervisor's stream from the worker (issue 28), for real in the container standing in for the
pod: code holding the real `os` writes the supervisor's own wire frames (a control reply, "the worker ended")
straight into its result pipe, the bytes the supervisor relays. They must reach the app only as the worker's
bytes (a broken worker frame: the worker is replaced), never as the supervisor speaking: no reply to a control
request and no end of the worker is taken from them, and the session goes on in a fresh worker."""
from __future__ import annotations

import sys

import pytest

from agents.executor import PythonSandbox
from agents.executor.remote import wire
from tests.executor.remote_container import SupervisedDockerBackend, docker_ready

pytestmark = [pytest.mark.skipif(sys.platform != "linux", reason="Linux confinement"),
              pytest.mark.skipif(docker_ready() is not None, reason=f"Docker: {docker_ready()}")]

FORGE = """
import fcntl, os, stat
forged, wrote = {forged!r}, 0
for fd in range(3, 256):
    try:
        mode, flags = os.fstat(fd).st_mode, fcntl.fcntl(fd, fcntl.F_GETFL)
    except OSError:
        continue
    if stat.S_ISFIFO(mode) and flags & os.O_ACCMODE == os.O_WRONLY:
        os.write(fd, forged)
        wrote += 1
"""

@pytest.mark.parametrize("forged", [
    wire.pack_json(b"X", {"how": "exited normally"}),
    wire.pack_json(b"R", {"id": 1, "value": 0.0}) * 8,
    wire.pack(b"W", b"\x00\x00\x00\x02{}"),
])
def test_attack_the_worker_cannot_speak_as_its_supervisor(tmp_path, forged):
    sb = PythonSandbox(str(tmp_path), authorized_imports=["*"], python_layers=False, timeout_s=20,
                       backend=SupervisedDockerBackend())
    try:
        assert sb.run("kept = 1").error is None
        host = sb.host
        forged_run = sb.run(FORGE.format(forged=forged))
        assert "FileNotFoundError" not in str(forged_run.error)
        assert forged_run.state_lost, "the forged bytes did not reach the app as a broken worker frame"
        assert host._link.worker_exit is None  # no "the worker ended" was taken from the worker's bytes
        assert not host._link.misbehaved  # nor a reply: the supervisor's link is sound
        after = sb.run("1 + 1")
        assert after.output == 2 and after.error is None, (after.error, after.logs)
    finally:
        sb.close()
