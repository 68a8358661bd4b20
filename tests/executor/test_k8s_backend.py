"""The `k8s` sandbox backend as the app uses it, through the real `kubernetes` client against the loopback
stand-in of the API server (tests/executor/k8s_standin.py): what it needs, the calls it makes (and that the
shipped Role grants exactly those), attach by the claim's name from a second backend instance."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

pytest.importorskip("kubernetes")

from agents.executor import backends
from agents.executor.errors import SandboxError, SandboxStartError
from agents.executor.k8s import K8sSandboxBackend
from agents.executor.k8s.settings import K8sSettings
from agents.host_settings import configure_host, reset_host
from tests.conftest import PROJECT_ROOT
from tests.executor.k8s_standin import K8sStandIn


@pytest.fixture
def standin() -> Iterator[K8sStandIn]:
    with K8sStandIn() as server:
        yield server


@pytest.fixture
def settings(standin: K8sStandIn, tmp_path: Path) -> K8sSettings:
    return K8sSettings(kubeconfig=str(standin.kubeconfig(tmp_path / "kubeconfig")), ready_timeout_s=10)


def test_what_the_backend_needs_is_named(tmp_path: Path) -> None:
    assert "AGENTDECK_K8S_KUBECONFIG" in (K8sSandboxBackend(K8sSettings()).unavailable_reason() or "")
    missing = K8sSandboxBackend(K8sSettings(kubeconfig=str(tmp_path / "nope"))).unavailable_reason()
    assert missing is not None and "not a file" in missing and "AGENTDECK_K8S_KUBECONFIG" in missing
    in_cluster = K8sSandboxBackend(K8sSettings(in_cluster=True)).unavailable_reason()
    assert in_cluster is not None and "service-account token" in in_cluster
    with pytest.raises(SandboxStartError, match="AGENTDECK_K8S_KUBECONFIG"):
        K8sSandboxBackend(K8sSettings()).claim()
    info = {b.name: b for b in backends.known()}
    assert "k8s" in info and "requirements-remote.txt" in info["k8s"].needs
    assert set(info) == set(backends.names())


def test_the_app_passes_the_settings_the_library_reads_no_environment(settings: K8sSettings,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTDECK_K8S_KUBECONFIG", settings.kubeconfig or "")
    try:
        assert K8sSandboxBackend().unavailable_reason() is not None  # the variable alone does nothing
        configure_host(k8s=settings)
        assert K8sSandboxBackend().unavailable_reason() is None
    finally:
        reset_host()


def _rbac(method: str, path: str, query: dict[str, list[str]]) -> tuple[str, str, str]:
    """(apiGroup, resource, verb) of a request, as the API server's authorizer names it."""
    parts = path.strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    else:
        group, rest = parts[1], parts[3:]
    assert rest[0] == "namespaces"
    resource = rest[2] + ("/" + rest[4] if len(rest) > 4 else "")
    named = len(rest) > 3
    if method == "POST":
        verb = "create"
    elif method == "DELETE":
        verb = "delete"
    elif resource == "pods/exec":
        verb = "create"
    elif query.get("watch", [""])[0].lower() == "true":
        verb = "watch"
    else:
        verb = "get" if named else "list"
    return group, resource, verb


def test_the_shipped_role_grants_exactly_the_calls_the_backend_makes(standin: K8sStandIn,
                                                                     settings: K8sSettings) -> None:
    backend = K8sSandboxBackend(settings)
    pod = backend.claim()
    stream = backend.exec_in(pod.pod, [settings.python, "-c", "print('hi')"])
    assert stream.read(100, timeout=10) == b"hi\n"
    stream.close()
    assert K8sSandboxBackend(settings).find(pod.claim) == pod  # another replica finds the same pod by the claim
    backend.release(pod.claim)
    used = {_rbac(r.method, r.path, r.query) for r in standin.requests}
    docs = yaml.safe_load_all((PROJECT_ROOT / "deploy" / "k8s" / "app.yaml").read_text())
    role = next(d for d in docs if d and d["kind"] == "Role")
    granted = {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
               for resource in rule["resources"] for verb in rule["verbs"]}
    assert used <= granted, f"the Role lacks {used - granted}"
    # Nothing more, but a websocket exec's GET (checked as `get` before Kubernetes 1.30).
    assert granted - used == {("", "pods/exec", "get")}


def test_attach_refuses_ids_it_did_not_make(standin: K8sStandIn, settings: K8sSettings) -> None:
    backend = K8sSandboxBackend(settings)
    for bad in ("../../etc", "agentdeck-0000000000000000", "someone-elses-claim"):
        with pytest.raises(SandboxError):
            backend.find(bad)
    standin.claims[("agentdeck-sandboxes", "agentdeck-00000000000000aa")] = {
        "apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
        "metadata": {"name": "agentdeck-00000000000000aa", "labels": {}}, "spec": {}, "status": {}}
    with pytest.raises(SandboxError, match="not made by this app"):
        backend.find("agentdeck-00000000000000aa")
