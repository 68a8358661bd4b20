"""The sandbox settings: the backend code runs on, its warm pool, its limits, the Docker engine and the
Kubernetes cluster of the `k8s` backend."""
from __future__ import annotations

from pydantic import field_validator

from agents.executor import backends
from ui.config.base import SettingsPart, setting

DEFAULT_UIDS = "40000-59999"


def parse_uid_range(text: str) -> tuple[int, int]:
    """`40000-59999` -> (40000, 60000): the first id and one past the last (raises ValueError otherwise)."""
    low_text, dash, high_text = text.strip().partition("-")
    if not dash or not low_text.isdigit() or not high_text.isdigit() or not 0 < int(low_text) < int(high_text):
        raise ValueError(f"{text!r} is not a range of user ids")
    return int(low_text), int(high_text) + 1


class SandboxSettings(SettingsPart):
    sandbox: str = setting(backends.DEFAULT, "the sandbox backend code runs on (the app refuses to start on one "
                                             "this machine cannot use; `agents.executor.backends.available()`)",
                           accepts="one of " + ", ".join(backends.names()))
    sandbox_pool: int = setting(1, "sandboxes started ahead of time per sandbox setting in use, each handed to one "
                                   "session only (0: every sandbox starts cold)", ge=0, le=16)
    sandbox_uids: str = setting(DEFAULT_UIDS, "the user ids sandboxes run as when the app runs as root, one per "
                                              "live sandbox", accepts="a range of user ids, e.g. 40000-59999")
    max_sandboxes: int = setting(16, "live sandboxes on the server; idle ones are closed first and rebuilt from "
                                     "memory on their next message", ge=1, le=10_000)
    exec_timeout_s: float = setting(120.0, "time limit of one code execution, in seconds", ge=1, le=86_400)
    docker_host: str = setting("", "the Docker Engine of the `docker` backend", accepts="a Docker host URL",
                               default_text="`DOCKER_HOST`, else the private engine of `make docker-up` when it "
                                            "runs, else unix:///var/run/docker.sock")
    docker_image: str = setting("", "an image tag to use as built (`make sandbox-image` prints it) instead of "
                                    "assembling this machine's on the first start", accepts="an image tag")
    docker_cpus: float = setting(1.0, "CPUs per sandbox container", ge=0.1, le=1024)
    dockerd_dir: str = setting("/var/tmp/agentdeck-dockerd", "the private Docker engine's folder "
                                                             "(`make docker-up`)", accepts="a folder path")
    e2b_template: str = setting("", "the E2B template of the `e2b` backend: one built with AgentDeck's sandbox "
                                    "image (its key is E2B's own `E2B_API_KEY`)", accepts="a template name or id")
    e2b_timeout_s: int = setting(3600, "how long E2B keeps an idle session's sandbox alive (each step renews "
                                       "it), in seconds", ge=60, le=86_400)
    e2b_domain: str = setting("", "the E2B deployment's domain (a self-hosted one)", accepts="a domain name",
                              default_text="`E2B_DOMAIN`, else E2B's cloud")
    e2b_api_url: str = setting("", "the E2B API's address, when it is not api.<domain>", accepts="an http(s) URL",
                               default_text="https://api.<domain>")

    k8s_kubeconfig: str = setting("", "the kubeconfig file of the cluster the `k8s` backend claims sandboxes on "
                                      "(or AGENTDECK_K8S_IN_CLUSTER)", accepts="a file path",
                                  default_text="none: the `k8s` backend is unavailable")
    k8s_context: str = setting("", "the kubeconfig context of the `k8s` backend", accepts="a context name",
                               default_text="the kubeconfig's current context")
    k8s_in_cluster: bool = setting(False, "the app runs in the cluster: the `k8s` backend uses the pod's service "
                                          "account (deploy/k8s/app.yaml) instead of a kubeconfig")
    k8s_namespace: str = setting("agentdeck-sandboxes", "the namespace of the `k8s` backend's sandbox claims and "
                                                        "warm pool (deploy/k8s/namespace.yaml)",
                                 accepts="a namespace", min_length=1)
    k8s_warm_pool: str = setting("agentdeck-sandbox-pool", "the SandboxWarmPool the `k8s` backend claims "
                                                           "sandboxes from (deploy/k8s/sandbox.yaml)",
                                 accepts="a SandboxWarmPool name", min_length=1)
    k8s_template: str = setting("agentdeck-sandbox", "the SandboxTemplate the warm pool must draw from (a pool "
                                                     "pointed at another template is refused)",
                                accepts="a SandboxTemplate name", min_length=1)
    k8s_container: str = setting("sandbox", "the sandbox pod's container the `k8s` backend runs the supervisor in",
                                 accepts="a container name", min_length=1)
    k8s_ready_timeout_s: float = setting(120.0, "how long a sandbox claim may take to be bound and ready, in "
                                                "seconds", ge=1, le=3600)

    @field_validator("sandbox")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        if value not in backends.names():
            raise ValueError(f"unknown sandbox backend {value!r}")
        return value

    @field_validator("sandbox_uids")
    @classmethod
    def _uid_range(cls, value: str) -> str:
        parse_uid_range(value)
        return value.strip()
