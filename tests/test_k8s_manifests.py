"""deploy/k8s: the Kubernetes manifests for more than one machine, which cannot run here (no cluster).

Checked as far as that allows: every core resource against Kubernetes' own JSON schemas in strict mode (the
`kubernetes-validate` package, pinned: unknown or misspelt fields fail), the agent-sandbox template and warm pool
against deploy/k8s/schemas (their pod spec and network rules against Kubernetes' schemas), and against the
project's real CRDs when a copy of kubernetes-sigs/agent-sandbox is at hand; then what the manifests promise
(no egress from sandboxes, non-root, no capabilities, cookie affinity, settings that exist).
"""
from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import PROJECT_ROOT

kubernetes_validate = pytest.importorskip("kubernetes_validate")
jsonschema = pytest.importorskip("jsonschema")
referencing = pytest.importorskip("referencing")

K8S = PROJECT_ROOT / "deploy" / "k8s"
KUBERNETES_VERSION = "1.33.0"  # the oldest release the manifests are written for (RuntimeClass, restricted PSS)
SANDBOX_KINDS = ("SandboxTemplate", "SandboxWarmPool")
#: A checkout of kubernetes-sigs/agent-sandbox (its CRDs in k8s/crds/), else the workplace's bare mirror of it.
AGENT_SANDBOX_REPO = os.environ.get("AGENT_SANDBOX_REPO", "")
AGENT_SANDBOX_MIRROR = Path("/work/.mirror/kubernetes-sigs+agent-sandbox/repo")


def documents() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        found += [(path.name, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return found


def by_kind(kind: str) -> list[dict[str, Any]]:
    return [doc for _, doc in documents() if doc["kind"] == kind]


def one(kind: str) -> dict[str, Any]:
    found = by_kind(kind)
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def _definitions() -> dict[str, Any]:
    from importlib.resources import files

    folder = files("kubernetes_validate") / "kubernetes-json-schema" / f"v{KUBERNETES_VERSION}-local-strict"
    return json.loads((folder / "_definitions.json").read_text())


def sandbox_validator(kind: str) -> Any:
    schema = json.loads((K8S / "schemas" / "agent-sandbox-v1beta1.json").read_text())
    registry = referencing.Registry().with_resources([
        (schema["$id"], referencing.Resource.from_contents(schema)),
        ("https://kubernetes.io/api/_definitions.json", referencing.Resource.from_contents(_definitions()))])
    return jsonschema.Draft202012Validator({"$ref": f"{schema['$id']}#/$defs/{kind}"}, registry=registry)


def test_kustomization_lists_every_manifest() -> None:
    listed = yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"]
    present = sorted(p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")
    assert sorted(listed) == present


@pytest.mark.parametrize("name,doc", [d for d in documents() if d[1]["kind"] not in SANDBOX_KINDS],
                         ids=lambda v: v if isinstance(v, str) else f"{v['kind']}/{v['metadata']['name']}")
def test_core_resources_meet_kubernetes_strict_schemas(name: str, doc: dict[str, Any]) -> None:
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize("kind", SANDBOX_KINDS)
def test_agent_sandbox_resources_meet_their_schema(kind: str) -> None:
    errors = [e.message for e in sandbox_validator(kind).iter_errors(one(kind))]
    assert not errors


def test_the_checks_refuse_a_misspelt_field() -> None:
    """The checks can fail: a misspelt field in the app's pod and in the sandbox's pod is refused."""
    deployment = copy.deepcopy(one("Deployment"))
    deployment["spec"]["template"]["spec"]["containers"][0]["securityContex"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)
    template = copy.deepcopy(one("SandboxTemplate"))
    template["spec"]["podTemplate"]["spec"]["runtimeClass"] = "gvisor"
    assert list(sandbox_validator("SandboxTemplate").iter_errors(template))
    template = copy.deepcopy(one("SandboxTemplate"))
    template["spec"]["networkPolicy"]["egres"] = []
    assert list(sandbox_validator("SandboxTemplate").iter_errors(template))


def crd_text(crd: str) -> str:
    """The CRD's YAML from a checkout of kubernetes-sigs/agent-sandbox or the bare mirror; skips without one."""
    if AGENT_SANDBOX_REPO:
        return (Path(AGENT_SANDBOX_REPO) / "k8s" / "crds" / crd).read_text()
    if (AGENT_SANDBOX_MIRROR / "HEAD").exists():
        shown = subprocess.run(["git", f"--git-dir={AGENT_SANDBOX_MIRROR}", "show", f"HEAD:k8s/crds/{crd}"],
                               capture_output=True, text=True, timeout=60)
        if shown.returncode == 0:
            return shown.stdout
    pytest.skip("no copy of kubernetes-sigs/agent-sandbox here (set AGENT_SANDBOX_REPO to a checkout)")


def _strict(schema: Any) -> Any:
    """A CRD's structural schema with unknown fields refused (the API server prunes them silently)."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items() if not k.startswith("x-kubernetes")}
        if schema.get("type") == "object" and "properties" in schema and "additionalProperties" not in schema \
                and not schema.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@pytest.mark.parametrize("kind,crd", [("SandboxTemplate", "extensions.agents.x-k8s.io_sandboxtemplates.yaml"),
                                      ("SandboxWarmPool", "extensions.agents.x-k8s.io_sandboxwarmpools.yaml")])
def test_agent_sandbox_resources_meet_the_real_crds(kind: str, crd: str) -> None:
    definition = yaml.safe_load(crd_text(crd))
    version = next(v for v in definition["spec"]["versions"] if v["name"] == "v1beta1")
    schema = _strict(version["schema"]["openAPIV3Schema"])
    errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(one(kind))]
    assert not errors


def test_sandboxes_have_no_egress_and_run_unprivileged() -> None:
    """No egress, gVisor, no token; the container's root holds only the supervisor's capabilities (the worker
    it starts runs as its own non-root user with none: agents/executor/remote/)."""
    from agents.executor.remote.interface import SUPERVISOR_CAPABILITIES, WORKER_UID

    template = one("SandboxTemplate")["spec"]
    assert template["networkPolicyManagement"] == "Managed"
    assert template["networkPolicy"]["egress"] == []  # omitted, the controller would allow public egress
    pod = template["podTemplate"]["spec"]
    assert pod["runtimeClassName"] == "gvisor" and pod["automountServiceAccountToken"] is False
    assert WORKER_UID > 0
    for container in pod["containers"]:
        context = container["securityContext"]
        assert context["capabilities"]["drop"] == ["ALL"] and context["allowPrivilegeEscalation"] is False
        assert sorted(context["capabilities"]["add"]) == sorted(SUPERVISOR_CAPABILITIES)
        assert context["readOnlyRootFilesystem"] is True
        assert {"cpu", "memory"} <= set(container["resources"]["limits"])
    pool = one("SandboxWarmPool")["spec"]
    assert pool["sandboxTemplateRef"]["name"] == one("SandboxTemplate")["metadata"]["name"]


def test_the_app_runs_unprivileged_behind_a_cookie_affine_ingress() -> None:
    deployment = one("Deployment")
    assert deployment["spec"]["replicas"] >= 2
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    service = next(s for s in by_kind("Service") if s["metadata"]["name"] == "agentdeck")
    assert service["spec"]["selector"].items() <= labels.items()
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["serviceAccountName"] == "agentdeck"
    ingress = one("Ingress")
    annotations = ingress["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/affinity"] == "cookie"
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == service["metadata"]["name"]
    redis_policy = one("NetworkPolicy")
    assert redis_policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"].items() <= labels.items()


def test_the_config_names_real_settings_and_points_at_the_shipped_redis() -> None:
    from ui.config import variable_names

    data = one("ConfigMap")["data"]
    ours = {name for name in data if name.startswith("AGENTDECK_")}
    assert ours and not ours - set(variable_names())
    redis_service = next(s for s in by_kind("Service") if s["metadata"]["name"] == "agentdeck-redis")
    assert data["AGENTDECK_REDIS_URL"].startswith(f"redis://{redis_service['metadata']['name']}:")
    assert data["AGENTDECK_CHAT_STORE"].startswith("s3://")


def test_the_k8s_backends_defaults_claim_from_these_manifests() -> None:
    """The `k8s` sandbox backend's default settings name this template, pool, namespace, container, interpreter
    and workspace folder, and the shipped config selects it with the replicas' service account."""
    from agents.executor.k8s.settings import K8sSettings

    defaults = K8sSettings()
    template = one("SandboxTemplate")
    assert defaults.template == template["metadata"]["name"]
    assert defaults.warm_pool == one("SandboxWarmPool")["metadata"]["name"]
    assert defaults.namespace == template["metadata"]["namespace"] == one("SandboxWarmPool")["metadata"]["namespace"]
    container = next(c for c in template["spec"]["podTemplate"]["spec"]["containers"]
                     if c["name"] == defaults.container)
    assert container["command"][0] == defaults.python
    assert defaults.workdir in {m["mountPath"] for m in container["volumeMounts"]}
    data = one("ConfigMap")["data"]
    assert data["AGENTDECK_SANDBOX"] == "k8s" and data["AGENTDECK_K8S_IN_CLUSTER"] == "1"
    assert data["AGENTDECK_K8S_WARM_POOL"] == defaults.warm_pool
    assert data["AGENTDECK_K8S_NAMESPACE"] == defaults.namespace
    binding, role, account = one("RoleBinding"), one("Role"), one("ServiceAccount")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                                    "namespace": account["metadata"]["namespace"]}]
    # The right to exec is granted in the sandboxes' namespace only: it reaches no pod of the app's or Redis'.
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == defaults.namespace


def test_only_the_sandbox_pods_fall_short_of_restricted() -> None:
    """Every resource names its namespace; the app's namespace enforces restricted and holds every pod but the
    sandboxes', whose namespace admits them (their supervisor's capabilities need the privileged level) and
    warns about any pod short of restricted. The app's and Redis' pods meet restricted on their own too."""
    namespaces = {doc["metadata"]["name"]: doc["metadata"]["labels"] for doc in by_kind("Namespace")}
    assert namespaces["agentdeck"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for labels in namespaces.values():
        assert labels["pod-security.kubernetes.io/warn"] == labels["pod-security.kubernetes.io/audit"] == "restricted"
    placed = {doc["kind"]: doc["metadata"].get("namespace") for _, doc in documents() if doc["kind"] != "Namespace"}
    assert all(ns in namespaces for ns in placed.values()), placed
    sandbox_ns = one("SandboxTemplate")["metadata"]["namespace"]
    assert namespaces[sandbox_ns]["pod-security.kubernetes.io/enforce"] == "privileged" and sandbox_ns != "agentdeck"
    for kind in ("Deployment", "StatefulSet"):
        assert all(doc["metadata"]["namespace"] == "agentdeck" for doc in by_kind(kind))
    for kind in ("Deployment", "StatefulSet"):
        for doc in by_kind(kind):
            pod = doc["spec"]["template"]["spec"]
            assert pod["securityContext"]["runAsNonRoot"] is True, doc["metadata"]["name"]
            for container in pod["containers"]:
                context = container["securityContext"]
                assert context["capabilities"] == {"drop": ["ALL"]}, doc["metadata"]["name"]
                assert context["allowPrivilegeEscalation"] is False
