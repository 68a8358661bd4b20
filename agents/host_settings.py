"""What a program embedding `agents` chooses for the whole process: the sandboxes' user ids, the Docker engine,
torch's threads, the local-model device and cache. Never read from the environment.

Why here and not in the environment: a program that uses `agents` as a library must get the behaviour it asks
for, not one an `AGENTDECK_*` variable of its process happens to set. These few are process-wide by nature (a
pool of user ids, one engine, torch's thread count), so they are set once with `configure_host(...)` (the app
does it at start from its settings object, ui/config/), and everything else is a parameter of what it
configures (`CodeAgent(sandbox=..., sandbox_limits=...)`, `RetryPolicy`, `Compaction(context_budget=...)`,
`load_model(..., record_to=...)`). Provider keys are read by the providers' own conventions (litellm, HF), and
`DOCKER_HOST` by Docker's.
"""
from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class HostSettings:
    """`sandbox_uids`: the user ids sandboxes run as when the process runs as root (first, one past the last).
    `docker_host`: the engine of the `docker` backend (None: `DOCKER_HOST`, else the private engine when it
    runs, else the system socket); `docker_image`: an image tag used as built; `docker_cpus`: CPUs per
    container; `dockerd_dir`: the private engine's folder. `torch_threads`: torch's threads for the embedded model
    (0 keeps torch's default). `device`: local models' device (None: CUDA, then MPS, then CPU). `cache_dir`:
    where the embedded model is converted (None: ~/.cache/agentdeck, `XDG_CACHE_HOME` respected).
    `compatible_server`: the operator's OpenAI-compatible server, one per process. `k8s`: the `k8s` sandbox
    backend's settings."""

    sandbox_uids: tuple[int, int] = (40000, 60000)
    docker_host: str | None = None
    docker_image: str | None = None
    docker_cpus: float = 1.0
    dockerd_dir: str = "/var/tmp/agentdeck-dockerd"
    torch_threads: int = 1
    device: str | None = None
    cache_dir: str | None = None
    #: The operator's OpenAI-compatible server (agents/models/compatible.py `CompatibleServer`); None: the OpenAI
    #: SDK's own `OPENAI_BASE_URL` with `OPENAI_API_KEY`, when set.
    compatible_server: Any = None
    #: The `e2b` sandbox backend's service, key and template (agents/executor/e2b/settings.py `E2BSettings`);
    #: None: that backend says it is not configured.
    e2b: Any = None
    #: The `k8s` sandbox backend's cluster and warm pool (agents/executor/k8s/settings.py `K8sSettings`); None:
    #: its defaults, with no cluster configured (the backend says so).
    k8s: Any = None
    #: Where remote sandboxes' holds live (agents/executor/holds.py `SandboxHolds`): the app's shared state, so
    #: replicas see one another's; None: this process's memory.
    sandbox_holds: Any = None

    def __post_init__(self) -> None:
        low, high = self.sandbox_uids
        if not 0 < low < high:
            raise ValueError(f"sandbox_uids must be (first, one past the last) with 0 < first < last, "
                             f"not {self.sandbox_uids!r}")
        if self.docker_cpus <= 0:
            raise ValueError(f"docker_cpus must be more than 0, not {self.docker_cpus!r}")
        if self.torch_threads < 0:
            raise ValueError(f"torch_threads must be 0 or more, not {self.torch_threads!r}")


_lock = threading.Lock()
_current = HostSettings()


def host_settings() -> HostSettings:
    """The settings in force (the defaults until `configure_host` changes them)."""
    return _current


def configure_host(**changes: Any) -> HostSettings:
    """Change some of the process's settings (the others are kept); returns the new ones. A field name that is
    not one of `HostSettings`' raises TypeError."""
    global _current
    with _lock:
        _current = dataclasses.replace(_current, **changes)
        return _current


def reset_host() -> HostSettings:
    """Back to the defaults (tests)."""
    global _current
    with _lock:
        _current = HostSettings()
        return _current
