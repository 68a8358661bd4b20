"""The `k8s` backend's cluster calls through the real `kubernetes` client against the loopback stand-in of the
API server (tests/executor/k8s_standin.py): the claims it makes and deletes, the pod it finds, exec as a byte
stream, the workspace's files by exec with their caps, and each failure's message naming what to fix."""
from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("kubernetes")

from kubernetes import client

from agents.executor.backend import FileTooLarge
from agents.executor.errors import SandboxStartError
from agents.executor.k8s.api import configuration
from agents.executor.k8s.claims import ClaimRefused, Claims, is_claim_name
from agents.executor.k8s.exec_stream import ExecStream, open_exec
from agents.executor.k8s.files import ExecFiles
from agents.executor.k8s.settings import K8sSettings
from tests.executor.k8s_standin import K8sStandIn, LocalPods, Pod
from tests.waiting import wait_until

CLAIMS_PATH = "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/agentdeck-sandboxes/sandboxclaims"


@pytest.fixture
def standin() -> Iterator[K8sStandIn]:
    with K8sStandIn() as server:
        yield server


@pytest.fixture
def settings(standin: K8sStandIn, tmp_path: Path) -> K8sSettings:
    return K8sSettings(kubeconfig=str(standin.kubeconfig(tmp_path / "kubeconfig")), ready_timeout_s=10)


def _claims(settings: K8sSettings) -> Claims:
    return Claims(settings, client.ApiClient(configuration(settings)))


def _exec(settings: K8sSettings, pod: str, command: list[str]) -> ExecStream:
    cfg = configuration(settings)
    return open_exec(lambda: client.ApiClient(cfg), settings.namespace, pod, settings.container, command, 10)


def test_a_claim_names_the_projects_warm_pool_and_is_deleted(standin: K8sStandIn, settings: K8sSettings) -> None:
    claims = _claims(settings)
    claims.check_pool()
    name, version = claims.create()
    assert is_claim_name(name) and version
    sandbox = claims.wait_bound(name, version, settings.ready_timeout_s)
    pod = claims.pod_of(name, sandbox)
    assert pod.pod != sandbox and pod.pod.startswith(sandbox)  # the adopted warm pod, from its annotation
    assert claims.pod_running(pod.pod) is None
    made = next(r for r in standin.requests if r.method == "POST")
    assert made.path == CLAIMS_PATH
    assert made.body["apiVersion"] == "extensions.agents.x-k8s.io/v1beta1" and made.body["kind"] == "SandboxClaim"
    assert made.body["spec"]["warmPoolRef"] == {"name": standin.pool["metadata"]["name"]}
    assert made.body["spec"]["lifecycle"]["shutdownPolicy"] == "Delete"  # a claim the app forgot still expires
    assert made.body["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "agentdeck"
    watched = [r for r in standin.requests if r.method == "GET" and r.path == CLAIMS_PATH]
    assert watched and watched[0].query["watch"][0].lower() == "true"  # the client sends "True"
    assert watched[0].query["fieldSelector"] == [f"metadata.name={name}"]
    claims.delete(name)
    assert ("agentdeck-sandboxes", name) not in standin.claims and not standin.pods
    claims.delete(name)  # already gone: fine


def test_exec_is_a_two_way_byte_stream_with_the_exit_status(standin: K8sStandIn, settings: K8sSettings) -> None:
    claims = _claims(settings)
    name, version = claims.create()
    pod = claims.pod_of(name, claims.wait_bound(name, version, 10))
    echo = ("import sys\nwhile (b := sys.stdin.buffer.read1(65536)):\n"
            " sys.stdout.buffer.write(bytes(reversed(b))); sys.stdout.buffer.flush()\n"
            "sys.stderr.write('bye'); sys.exit(7)")
    stream = _exec(settings, pod.pod, [settings.python, "-I", "-S", "-c", echo])
    stream.sock.settimeout(10)  # a stream that never answers fails the test, not hangs it
    payload = bytes(range(256))  # every byte value survives the channel framing
    stream.sock.sendall(payload)
    got = b""
    while len(got) < len(payload):
        got += stream.sock.recv(4096)
    assert got == bytes(reversed(payload))
    stream.sock.shutdown(socket.SHUT_WR)
    assert stream.sock.recv(10) == b""
    assert stream.wait_ended(10) == (7, "exited with code 7")
    assert stream.stderr_tail() == "bye"
    exec_request = next(r for r in standin.requests if r.path.endswith("/exec"))
    assert exec_request.query["container"] == ["sandbox"] and exec_request.query["stdin"][0].lower() == "true"
    claims.delete(name)


def test_files_by_exec_keep_their_caps_and_refusals(standin: K8sStandIn, settings: K8sSettings) -> None:
    claims = _claims(settings)
    name, version = claims.create()
    pod = claims.pod_of(name, claims.wait_bound(name, version, 10))
    files = ExecFiles(lambda cmd: _exec(settings, pod.pod, list(cmd)), settings.python, settings.workdir)
    files.put("data/table.csv", b"a,b\n1,2\n")
    folder = standin.pods[("agentdeck-sandboxes", pod.pod)].folder / "workspace"
    assert (folder / "data" / "table.csv").read_bytes() == b"a,b\n1,2\n"
    assert set(files.list()) == {"data/table.csv"} and files.list()["data/table.csv"].size == 8
    assert files.get("data/table.csv") == b"a,b\n1,2\n"
    with pytest.raises(FileTooLarge):
        files.get("data/table.csv", max_bytes=4)
    with pytest.raises(FileTooLarge):
        files.put("big.bin", b"x" * 11, max_bytes=10)
    with pytest.raises(FileExistsError):
        files.put("data/table.csv", b"new", exclusive=True)
    with pytest.raises(FileNotFoundError):
        files.get("absent.txt")
    for path in ("../etc/passwd", "/etc/passwd", "data/../x"):
        with pytest.raises(PermissionError):
            files.get(path)
    (folder / "link.txt").symlink_to("/etc/passwd")  # planted by code in the pod
    (folder / "out").symlink_to("/etc")
    with pytest.raises(PermissionError):
        files.get("link.txt")
    with pytest.raises(PermissionError):
        files.get("out/passwd")
    with pytest.raises(PermissionError):
        files.put("out/x", b"1")
    assert "link.txt" not in files.list()
    for n in range(3):
        files.put(f"many/{n}.txt", b"")
    with pytest.raises(OverflowError):
        files.list(max_entries=2)
    files.remove("data/table.csv")
    assert set(files.list()) == {"many/0.txt", "many/1.txt", "many/2.txt"}
    claims.delete(name)


def test_a_pod_that_sends_more_than_the_cap_is_cut_off(standin: K8sStandIn, settings: K8sSettings) -> None:
    """The file script runs next to the code: a pod answering a `get` with more than the cap is refused after
    the cap plus one byte, never read whole."""
    claims = _claims(settings)
    name, version = claims.create()
    pod = claims.pod_of(name, claims.wait_bound(name, version, 10))
    flood = "import sys\nwhile True: sys.stdout.buffer.write(b'x' * 65536)"
    files = ExecFiles(lambda cmd: _exec(settings, pod.pod, [settings.python, "-c", flood]), settings.python,
                      settings.workdir)
    with pytest.raises(FileTooLarge):
        files.get("anything", max_bytes=1000)
    listing = "import sys, json\nsys.stdout.write(json.dumps({'../../etc/passwd': [1, 2], 'ok.txt': [3, 4]}))"
    files = ExecFiles(lambda cmd: _exec(settings, pod.pod, [settings.python, "-c", listing]), settings.python,
                      settings.workdir)
    assert set(files.list()) == {"ok.txt"}
    claims.delete(name)


def test_quota_refused_names_the_namespace(standin: K8sStandIn, settings: K8sSettings) -> None:
    standin.refuse_create = (403, 'sandboxclaims "x" is forbidden: exceeded quota: agentdeck-quota')
    with pytest.raises(ClaimRefused, match="quota is spent.*AGENTDECK_K8S_NAMESPACE|AGENTDECK_K8S_NAMESPACE.*quota"):
        _claims(settings).create()
    standin.refuse_create = (403, "User cannot create resource")
    with pytest.raises(ClaimRefused, match="service account may not create sandboxclaims"):
        _claims(settings).create()
    assert not standin.claims


def test_a_claim_never_ready_times_out_naming_the_pool(standin: K8sStandIn, settings: K8sSettings) -> None:
    standin.never_ready = True
    claims = _claims(settings)
    name, version = claims.create()
    with pytest.raises(ClaimRefused, match=r"not ready within 2 s \(Ready=False: SandboxNotReady.*"
                                           r"agentdeck-sandbox-pool.*AGENTDECK_K8S_READY_TIMEOUT_S"):
        claims.wait_bound(name, version, 2)
    claims.delete(name)
    assert not standin.claims


def test_a_pool_on_another_template_or_missing_is_refused(standin: K8sStandIn, settings: K8sSettings,
                                                          tmp_path: Path) -> None:
    other = K8sSettings(kubeconfig=settings.kubeconfig, template="someone-elses")
    with pytest.raises(ClaimRefused, match="draws from the template 'agentdeck-sandbox'.*AGENTDECK_K8S_TEMPLATE"):
        _claims(other).check_pool()
    missing = K8sSettings(kubeconfig=settings.kubeconfig, warm_pool="no-pool")
    with pytest.raises(ClaimRefused, match="no SandboxWarmPool 'no-pool'.*AGENTDECK_K8S_WARM_POOL"):
        _claims(missing).check_pool()


def test_a_pod_gone_and_a_stream_cut_end_the_stream(standin: K8sStandIn, settings: K8sSettings) -> None:
    claims = _claims(settings)
    name, version = claims.create()
    pod = claims.pod_of(name, claims.wait_bound(name, version, 10))
    wait = [settings.python, "-c", "import sys; sys.stdin.read()"]
    cut = _exec(settings, pod.pod, wait)
    wait_until(lambda: standin.live_processes() == 1, what="the exec'd process")
    assert standin.cut_streams() == 1
    assert cut.read(10, timeout=10) == b"", "the cut stream did not end for its reader within 10 s"
    ended = cut.wait_ended(10)
    assert ended is not None and ended[0] is None and "cut" in ended[1]
    # its process ends too (stdin closed): the one counted next is the second exec's, not this one
    wait_until(lambda: standin.live_processes() == 0, what="the cut stream's process to end")
    gone = _exec(settings, pod.pod, wait)
    wait_until(lambda: standin.live_processes() == 1, what="the second exec'd process")
    standin.remove_pod(pod.pod)
    assert gone.read(10, timeout=10) == b"", "the stream of the removed pod did not end within 10 s"
    assert claims.pod_running(pod.pod) == f"the pod {pod.pod} is gone (evicted, deleted or its node lost)"
    with pytest.raises(SandboxStartError, match="exec into the pod .* was refused"):
        _exec(settings, pod.pod, wait)
    claims.delete(name)


class _HeldExecs(LocalPods):
    """Local pods whose exec'd process starts only at `release`: the moment between an exec's handshake and its
    process, when a slow machine can remove the pod."""

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()

    async def exec(self, pod: Pod, command: list[str]) -> asyncio.subprocess.Process:
        self.entered.set()
        await asyncio.to_thread(self.release.wait, 30)
        return await super().exec(pod, command)


def test_a_pod_removed_while_an_exec_starts_ends_that_exec_too(tmp_path: Path) -> None:
    """The stand-in's stream of a pod removed before the exec's process started ends, and that process is
    killed: a stream it left open made test_a_pod_gone_and_a_stream_cut_end_the_stream wait forever."""
    held = _HeldExecs()
    with K8sStandIn(held) as standin:
        settings = K8sSettings(kubeconfig=str(standin.kubeconfig(tmp_path / "kubeconfig")))
        claims = _claims(settings)
        name, version = claims.create()
        pod = claims.pod_of(name, claims.wait_bound(name, version, 10))
        stream = _exec(settings, pod.pod, [settings.python, "-c", "import sys; sys.stdin.read()"])
        try:
            assert held.entered.wait(10), "the exec did not reach the pod's runtime"
            standin.remove_pod(pod.pod)
        finally:
            held.release.set()
        assert stream.read(10, timeout=10) == b"", "the stream of the removed pod did not end within 10 s"
        wait_until(lambda: standin.live_processes() == 0, timeout=10, what="the removed pod's process killed")


def test_an_unauthenticated_client_is_refused_by_the_standin(standin: K8sStandIn, tmp_path: Path) -> None:
    """The stand-in checks the kubeconfig's token, so the tests above prove the client sent it."""
    path = standin.kubeconfig(tmp_path / "bad")
    text = json.dumps(standin.token)
    path.write_text(path.read_text().replace(text.strip('"'), "wrong"))
    with pytest.raises(ClaimRefused, match="401"):
        _claims(K8sSettings(kubeconfig=str(path))).create()


def test_exec_as_a_byte_stream_reads_with_timeouts_and_close_wakes_a_reader(standin: K8sStandIn,
                                                                            settings: K8sSettings) -> None:
    import threading

    claims = _claims(settings)
    name, version = claims.create()
    pod = claims.pod_of(name, claims.wait_bound(name, version, 10))
    cat = [settings.python, "-c", "import sys\nwhile (b := sys.stdin.buffer.read1(65536)):\n"
                                  " sys.stdout.buffer.write(b); sys.stdout.buffer.flush()"]
    stream = _exec(settings, pod.pod, cat)
    from agents.executor.remote import ByteStream, RemoteFiles

    assert isinstance(stream, ByteStream)
    assert isinstance(ExecFiles(lambda cmd: stream, settings.python, settings.workdir), RemoteFiles)
    assert stream.read(100, timeout=0.05) is None  # nothing yet: None, not b""
    big = b"0123456789" * 100_000  # more than the socket buffers: write waits for the pod to take it
    got = bytearray()
    writer = threading.Thread(target=stream.write, args=(big, 30))
    writer.start()
    while len(got) < len(big):
        chunk = stream.read(65536, timeout=10)
        assert chunk, "the stream ended early"
        got += chunk
    writer.join(10)
    assert bytes(got) == big
    results: list[bytes | None] = []
    reader = threading.Thread(target=lambda: results.append(stream.read(10, timeout=60)))
    reader.start()
    stream.close()
    reader.join(10)
    assert not reader.is_alive() and results == [b""]
    with pytest.raises(OSError):
        stream.write(b"more", 1)
    claims.delete(name)
