"""Sessions on the `k8s` backend, end to end: `PythonSandbox` -> the real `kubernetes` client -> the loopback
stand-in of the API server -> pods that are Docker containers of the project's sandbox image, configured from
deploy/k8s/sandbox.yaml (tests/executor/k8s_standin_docker.py), with the supervisor and the worker running in
them for real. Needs the private Docker daemon (`make docker-up`); skipped without one."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kubernetes")

from agents.executor import PythonSandbox
from agents.executor.backend import FileTooLarge
from agents.executor.docker import daemon
from agents.executor.errors import SandboxError
from agents.executor.holds import Hold, MemoryHolds, SandboxHeldElsewhere
from agents.executor.k8s import K8sSandboxBackend
from agents.executor.k8s.settings import K8sSettings
from tests.executor.k8s_standin import K8sStandIn
from tests.executor.k8s_standin_docker import LABEL, DockerPods
from tests.waiting import wait_until

WHY_NOT = daemon.reachable()
pytestmark = [pytest.mark.docker, pytest.mark.skipif(WHY_NOT is not None, reason=f"no Docker Engine: {WHY_NOT}")]
CLAIMS = "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/agentdeck-sandboxes/sandboxclaims"


@pytest.fixture(scope="module")
def pods() -> Iterator[DockerPods]:
    runtime = DockerPods()  # builds or finds the sandbox image once
    yield runtime
    runtime.close()


@pytest.fixture
def standin(pods: DockerPods) -> Iterator[K8sStandIn]:
    with K8sStandIn(pods) as server:
        yield server
    left = pods.client.containers.list(all=True, filters={"label": LABEL})
    assert not [c for c in left if c.id in pods.started], "a pod's container was left behind"


@pytest.fixture
def settings(standin: K8sStandIn, tmp_path: Path) -> K8sSettings:
    return K8sSettings(kubeconfig=str(standin.kubeconfig(tmp_path / "kubeconfig")), ready_timeout_s=120)


def _sandbox(settings: K8sSettings, tmp_path: Path, **kwargs: Any) -> PythonSandbox:
    return PythonSandbox(str(tmp_path / "ws"), backend=K8sSandboxBackend(settings), timeout_s=30, **kwargs)


def test_a_session_keeps_variables_calls_tools_in_the_app_and_moves_files(standin: K8sStandIn,
                                                                        settings: K8sSettings,
                                                                        tmp_path: Path) -> None:
    calls: list[str] = []

    def lookup(key: str) -> str:
        calls.append(key)
        return f"value of {key}"

    with _sandbox(settings, tmp_path) as sb:
        sb.register_tools({"lookup": lookup})
        first = sb.run("x = 41\nanswer = lookup('k')\nx + 1")
        assert first.error is None and first.output == 42
        assert calls == ["k"]  # the tool ran in the app: the pod has no network
        again = sb.run("(x, answer)")
        assert again.error is None and list(again.output) == [41, "value of k"]
        host = sb.host
        assert host is not None and host.id.startswith("agentdeck-")
        host.put_file("in/data.csv", b"a,b\n1,2\n")
        made = sb.run("open('out.txt', 'w').write(open('in/data.csv').read().upper())\n'ok'")
        assert made.error is None and made.output == "ok"
        assert host.get_file("out.txt") == b"A,B\n1,2\n"
        assert (tmp_path / "ws" / "out.txt").read_bytes() == b"A,B\n1,2\n"  # the app's copy of the workspace
        with pytest.raises(FileTooLarge):
            host.get_file("out.txt", max_bytes=3)
        with pytest.raises(FileTooLarge):
            host.put_file("big.bin", b"x" * 2000, max_bytes=1000)
        claim = host.id
        assert ("agentdeck-sandboxes", claim) in standin.claims
    created = [r for r in standin.requests if r.method == "POST" and r.path == CLAIMS]
    assert len(created) == 1
    body = created[0].body
    assert body["spec"]["warmPoolRef"]["name"] == "agentdeck-sandbox-pool"
    assert body["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "agentdeck"
    assert '"timeout_s":30' in body["metadata"]["annotations"]["agentdeck/worker-settings"]
    supervisor = next(r for r in standin.requests if r.path.endswith("/exec"))
    assert supervisor.query["container"] == ["sandbox"] and "--worker-uid" in supervisor.query["command"]
    assert ("DELETE", f"{CLAIMS}/{claim}") in [(r.method, r.path) for r in standin.requests]
    assert not standin.claims and not standin.pods  # nothing left behind


def _run_in_thread(sb: PythonSandbox, code: str) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(sb.run(code)))
    thread.start()
    return thread, out


def test_a_pod_gone_mid_run_tells_the_agent_its_variables_are_gone(standin: K8sStandIn, settings: K8sSettings,
                                                                  tmp_path: Path) -> None:
    started = threading.Event()
    with _sandbox(settings, tmp_path) as sb:
        sb.register_tools({"mark": lambda: started.set()})
        assert sb.run("x = 1").error is None
        thread, out = _run_in_thread(sb, "mark()\nimport time\ntime.sleep(60)")
        assert started.wait(60)
        standin.remove_pod(next(iter(standin.pods.values())).name)
        thread.join(60)
        result = out[0]
        assert result.error is not None and result.state_lost
        assert "all state from earlier steps was lost" in str(result.error)  # what the agent reads
        assert "is gone (evicted, deleted or its node lost)" in str(result.error)
        after = sb.run("x")  # a new claim, a new pod: the session goes on without its variables
        assert after.error is not None and "NameError" in str(after.error)
        assert len([r for r in standin.requests if r.method == "POST" and r.path == CLAIMS]) == 2
    assert not standin.claims


def test_a_cut_stream_loses_the_variables_and_says_the_pod_still_runs(standin: K8sStandIn, settings: K8sSettings,
                                                                      tmp_path: Path) -> None:
    with _sandbox(settings, tmp_path) as sb:
        assert sb.run("x = 1").error is None
        host = sb.host
        assert host is not None
        assert standin.cut_streams() == 1
        wait_until(lambda: host.dead, what="the host to see its stream end")  # between steps
        result = sb.run("x")
        assert result.state_lost and "only the connection was lost" in str(result.error) + result.logs
        assert sb.run("y = 2\ny").output == 2
    assert not standin.claims


#: Short holds, so a replica that died frees its claim within the test (agents/executor/holds.py).
HOLD_TTL_S = 1.0
OWNER = "chat-owner-tag"  # the chat's tag (SandboxSpec.owner): an attach must name it


def _replicas(settings: K8sSettings) -> tuple[K8sSandboxBackend, K8sSandboxBackend]:
    """Two app replicas: backend instances sharing one holds store (the app's Redis), as configured apart."""
    holds = MemoryHolds()
    return (K8sSandboxBackend(settings, holds=holds, hold_ttl_s=HOLD_TTL_S),
            K8sSandboxBackend(settings, holds=holds, hold_ttl_s=HOLD_TTL_S))


def _attach_when_free(backend: K8sSandboxBackend, claim: str, tmp_path: Path) -> PythonSandbox | None:
    try:
        return PythonSandbox(str(tmp_path / "ws-b"), backend=backend, attach=claim, timeout_s=30, owner=OWNER)
    except SandboxHeldElsewhere:
        return None


def test_a_claim_held_by_one_replica_is_not_attached_by_another(standin: K8sStandIn, settings: K8sSettings,
                                                                tmp_path: Path) -> None:
    """Issue 28: replica B attaching the claim replica A's session still uses started a second worker in A's pod
    (both drove its workspace). Now B is refused, with a message that says why, and nothing runs in the pod;
    once A's session closed (the claim deleted, the hold released), B learns the sandbox is gone, not held."""
    a, b = _replicas(settings)
    with PythonSandbox(str(tmp_path / "ws"), backend=a, timeout_s=30) as sb:
        assert sb.run("x = 5").error is None
        host = sb.host
        assert host is not None
        claim, execs = host.id, standin.exec_count
        with pytest.raises(SandboxHeldElsewhere, match="open elsewhere, maybe on another server"):
            b.attach(claim)
        with pytest.raises(SandboxHeldElsewhere, match="in use by another session of this app"):
            a.attach(claim, expect=sb.spec)  # another session of A: two would share one worker
        assert standin.exec_count == execs  # no supervisor was started in A's pod
        assert sb.run("x").output == 5  # A still drives its worker
    assert not standin.claims  # A's close deleted its claim...
    Hold(b.holds, claim).take()  # ...and released its hold
    with pytest.raises(SandboxError) as gone:
        b.attach(claim)
    assert not isinstance(gone.value, SandboxHeldElsewhere)


def test_a_replica_that_died_loses_its_claim_to_another_and_its_late_close_keeps_it(standin: K8sStandIn,
                                                                                   settings: K8sSettings,
                                                                                   tmp_path: Path) -> None:
    """Replica A stalls (its hold is no longer renewed, and runs out); replica B attaches by the id the chat
    recorded: the same pod, its workspace files, a new worker. A's session ends late: A drives the pod no more
    and its close does not delete the claim B uses now (it did: B's sandbox vanished under it)."""
    a, b = _replicas(settings)
    sb = PythonSandbox(str(tmp_path / "ws"), backend=a, timeout_s=30, owner=OWNER)
    other: PythonSandbox | None = None
    try:
        assert sb.run("x = 5\nopen('kept.txt', 'w').write('from A')").error is None
        host = sb.host
        assert host is not None
        claim = host.id
        hold = getattr(host, "hold", None)
        if hold is not None:  # code from before the holds has none to abandon
            hold.abandoned = True  # A stops renewing: its hold runs out within HOLD_TTL_S
        other = wait_until(lambda: _attach_when_free(b, claim, tmp_path), 20, "A's hold to run out", poll_s=0.1)
        attached = other.host
        assert attached is not None and attached.id == claim
        assert attached.get_file("kept.txt") == b"from A"
        assert other.run("y = 2\ny").output == 2
        assert b.attach(claim) is attached  # live in B: the same host
        with pytest.raises(SandboxHeldElsewhere, match="held by another session"):
            host.send({"op": "exec", "code": "x"})  # A's worker is not driven any more
        sb.close()  # A's late close: its own supervisor ends, the claim stays B's
        assert ("agentdeck-sandboxes", claim) in standin.claims
        assert getattr(host, "let_go", False)
        assert other.run("y + 1").output == 3  # B's worker goes on
    finally:
        sb.close()
        if other is not None:
            other.close()
    assert not standin.claims  # B closed it: the claim is deleted
