"""Attack on the holds between two replicas (issue 28): replica A stalls past its hold's expiry, replica B
attaches the sandbox (it takes the hold and the supervisor's output), then A wakes up and carries on where its
run loop was: it asks the supervisor for the worker's CPU time (each step starts so), freezes or interrupts it.
Only `send` checked the hold; control requests and signals went out on the supervisor's stdin, which anyone
with the sandbox may write, and their replies came back on B's connection: B's link took them as replies nobody
asked for and killed B's sandbox (its variables gone), and A's freeze or interrupt would hit B's running step.
A host whose hold is lost must send nothing at all to the sandbox."""
from __future__ import annotations

import os

import pytest

pytest.importorskip("e2b")

from agents.executor import PythonSandbox
from agents.executor.docker import daemon
from agents.executor.e2b.backend import E2BBackend
from agents.executor.holds import MemoryHolds, SandboxHeldElsewhere
from agents.executor.protocol import ChannelClosed
from tests.executor.e2b_standin import E2BStandIn
from tests.waiting import wait_until

WHY_NOT = daemon.reachable()
if WHY_NOT is not None and os.environ.get("CI"):
    raise RuntimeError(f"CI must reach a Docker Engine for the E2B backend's tests: {WHY_NOT}")
pytestmark = [pytest.mark.docker, pytest.mark.skipif(WHY_NOT is not None, reason=f"no Docker Engine: {WHY_NOT}")]


@pytest.fixture
def standin():
    from tests.executor.e2b_standin_docker import DockerRunner

    service = E2BStandIn(runner=DockerRunner())
    service.fan_out = True  # a second connection to the supervisor does not cut the first (E2B's envd)
    yield service
    service.close()


@pytest.mark.parametrize("act", ["cpu", "interrupt"])
def test_attack_a_replica_that_lost_its_hold_sends_nothing_to_the_sandbox(standin, tmp_path, act):
    holds = MemoryHolds()
    a = PythonSandbox(workdir=str(tmp_path / "a"), timeout_s=20, owner="chat-1",
                      backend=E2BBackend(standin.settings(), holds=holds, hold_ttl_s=1.0))
    b: PythonSandbox | None = None
    try:
        a.run("kept = 41")
        host_a = a.host
        host_a.hold.abandoned = True  # A stalls: its hold is renewed no more and runs out

        def b_attaches() -> bool:
            nonlocal b
            try:
                b = PythonSandbox(workdir=str(tmp_path / "b"), timeout_s=20, attach=host_a.id, owner="chat-1",
                                  backend=E2BBackend(standin.settings(), holds=holds, hold_ttl_s=1.0))
            except SandboxHeldElsewhere:
                return False
            return True

        wait_until(b_attaches, 30, "B to attach the sandbox once A's hold ran out")
        assert b is not None
        host_a.hold.abandoned = False  # A's stall is over: its run loop carries on
        sent = len(standin.calls("POST", "/process.Process/SendInput"))
        if act == "cpu":
            with pytest.raises(ChannelClosed):
                host_a.cpu_seconds()  # what A's next step asks first
        else:
            host_a.interrupt()  # a person pressing Stop in A's old tab
        assert host_a.dead and host_a.let_go  # A let go of the sandbox (its close kills nothing)
        assert len(standin.calls("POST", "/process.Process/SendInput")) == sent, "A wrote to B's supervisor"
        result = b.run("kept + 1")
        assert result.error is None and not result.state_lost, (result.error, result.logs)
        assert result.output == 42
        later = a.run("1 + 1")  # A's session goes on in a sandbox of its own, told its variables are gone
        assert later.output == 2 and later.state_lost, (later.error, later.logs)
        assert a.host.id != b.host.id and b.run("kept").output == 41
    finally:
        if b is not None:
            b.close()
        a.close()
    assert standin.live() == []
