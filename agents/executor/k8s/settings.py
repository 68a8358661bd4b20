"""The Kubernetes backend's settings: which cluster, which namespace, which warm pool and template to claim from.

Why a dataclass passed in, never the environment: the `agents` library reads no AGENTDECK_* variable
(`agents/host_settings.py`); the app builds one of these from its own settings (ui/config/) and hands it over with
`configure_host(k8s=...)`, and a program using the library passes one to `K8sSandboxBackend(settings=...)`.
The kubernetes client's own conventions (a kubeconfig file's contents, the in-cluster service-account token) are
the client's, read only when a setting asks for them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

#: The agent-sandbox API the backend speaks (kubernetes-sigs/agent-sandbox, v1beta1): claims are in the
#: extensions group, sandboxes in the core group.
CLAIM_GROUP = "extensions.agents.x-k8s.io"
SANDBOX_GROUP = "agents.x-k8s.io"
API_VERSION = "v1beta1"
CLAIMS = "sandboxclaims"
SANDBOXES = "sandboxes"
#: Annotations the agent-sandbox controller sets: the pod a warm sandbox adopted, the template it came from.
POD_NAME_ANNOTATION = "agents.x-k8s.io/pod-name"
TEMPLATE_REF_ANNOTATION = "agents.x-k8s.io/sandbox-template-ref"
#: Labels the backend puts on every claim it makes (an operator can list or clean them up with a selector).
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "agentdeck"
CREATED_BY_LABEL = "agents.x-k8s.io/created-by"
#: The service-account token an in-cluster client reads (the client's convention, checked only to say what is
#: missing when `in_cluster` is set).
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


@dataclass(frozen=True)
class K8sSettings:
    """Where the `k8s` backend claims sandboxes (the app's AGENTDECK_K8S_KUBECONFIG and
    related settings; deploy/k8s/sandbox.yaml).

    `kubeconfig`: a kubeconfig file (with `context`, one of its contexts; None: its current one); `in_cluster`:
    use the pod's service account instead (the app running in the cluster: deploy/k8s/app.yaml). One of the two
    must be set: the backend never guesses a cluster. `namespace`: where claims are made (the warm pool's).
    `warm_pool`: the SandboxWarmPool claims name (v1beta1 claims reference the pool, and the pool its
    template); `template`: the SandboxTemplate the claimed sandbox must come from (checked on the sandbox's
    annotation, so a pool pointed at another template is refused, not used). `container`: the pod's container
    the supervisor runs in; `python`: the interpreter there; `workdir`: the workspace folder there.
    `ready_timeout_s`: how long a claim may take to be bound and ready; `request_timeout_s`: one API call;
    `control_timeout_s`: one supervisor reply (each round trip crosses the API server and the kubelet, so more
    than the remote host's 10 s default; a later reply ends the sandbox).
    """

    kubeconfig: str | None = None
    context: str | None = None
    in_cluster: bool = False
    namespace: str = "agentdeck-sandboxes"
    warm_pool: str = "agentdeck-sandbox-pool"
    template: str = "agentdeck-sandbox"
    container: str = "sandbox"
    python: str = "/usr/local/bin/python3"
    workdir: str = "/workspace"
    ready_timeout_s: float = 120.0
    request_timeout_s: float = 30.0
    control_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        for name in ("namespace", "warm_pool", "template", "container", "python", "workdir"):
            if not getattr(self, name).strip():
                raise ValueError(f"the k8s backend's {name} setting must not be empty")
        if min(self.ready_timeout_s, self.request_timeout_s, self.control_timeout_s) <= 0:
            raise ValueError("the k8s backend's timeouts must be positive")

    def missing(self) -> str | None:
        """What is missing to reach a cluster, as a sentence naming the setting; None when nothing is."""
        if self.in_cluster:
            if not os.path.exists(SERVICE_ACCOUNT_TOKEN):
                return (f"AGENTDECK_K8S_IN_CLUSTER is set but this process has no service-account token "
                        f"({SERVICE_ACCOUNT_TOKEN}): run the app in the cluster with the service account of "
                        f"deploy/k8s/app.yaml, or set AGENTDECK_K8S_KUBECONFIG instead")
            return None
        if not self.kubeconfig:
            return ("no cluster is configured: set AGENTDECK_K8S_KUBECONFIG to a kubeconfig file, or "
                    "AGENTDECK_K8S_IN_CLUSTER=1 when the app runs in the cluster")
        if not os.path.isfile(self.kubeconfig):
            return f"AGENTDECK_K8S_KUBECONFIG names {self.kubeconfig!r}, which is not a file here"
        return None
