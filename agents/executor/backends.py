"""The sandbox backends by name: which exist, which this machine can use, and the one the app runs on.

Why a registry of module paths: a backend's module is imported only when it is asked for, so the app does not
load Docker's client (or fail) when it runs the local worker. A new backend is its package exposing a class
that implements `backend.SandboxBackend` (constructible with no arguments) and one line in `KNOWN`.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass

from .backend import SandboxBackend
from .errors import SandboxError

DEFAULT = "local"
KNOWN: dict[str, str] = {
    "local": "agents.executor.local:LocalBackend",
    "docker": "agents.executor.docker:DockerBackend",
    "e2b": "agents.executor.e2b:E2BBackend",
    "k8s": "agents.executor.k8s:K8sSandboxBackend",
}
#: What each backend needs beyond this package, for `known()` (the operator's checklist; README's table).
NEEDS: dict[str, str] = {
    "local": "Linux (the worker's kernel layers); nothing to install",
    "docker": "a Docker Engine (make docker-up, AGENTDECK_DOCKER_HOST or DOCKER_HOST) and the docker package",
    "e2b": "the e2b package (requirements-remote.txt), E2B_API_KEY, and AGENTDECK_E2B_TEMPLATE naming an E2B "
           "template built with AgentDeck's sandbox image",
    "k8s": "the kubernetes package (requirements-remote.txt), a cluster running kubernetes-sigs/agent-sandbox "
           "with deploy/k8s/ applied, and AGENTDECK_K8S_KUBECONFIG or AGENTDECK_K8S_IN_CLUSTER",
}

_lock = threading.Lock()
_instances: dict[str, SandboxBackend] = {}
_usable: set[str] = set()  # found usable once: not asked again per sandbox (a start that fails still says why)


class UnknownBackend(SandboxError):
    """A sandbox backend name that is not one of `KNOWN`."""


class BackendUnavailable(SandboxError):
    """A known backend this machine cannot use (the reason says what to install or build)."""


@dataclass(frozen=True)
class BackendInfo:
    """One backend for `known()`: its name, what it needs, and why this machine cannot use it now (None: it can)."""

    name: str
    needs: str
    unavailable: str | None


def known() -> list[BackendInfo]:
    """Every backend the app knows with what it needs and whether it is usable here (`available()` is the
    usable ones' names)."""
    return [BackendInfo(name, NEEDS.get(name, ""), unavailable_reason(name)) for name in KNOWN]


def names() -> list[str]:
    """Every backend the app knows, usable here or not."""
    return list(KNOWN)


def get(name: str) -> SandboxBackend:
    """The backend called `name` (one instance per process), whether or not it is usable here."""
    if name not in KNOWN:
        raise UnknownBackend(f"unknown sandbox backend {name!r}; known: {', '.join(KNOWN)}")
    with _lock:
        backend = _instances.get(name)
        if backend is None:
            module_name, _, cls_name = KNOWN[name].partition(":")
            try:
                module = importlib.import_module(module_name)
            except ImportError as exc:
                raise BackendUnavailable(f"the sandbox backend {name!r} is not installed here: {exc}") from exc
            backend = getattr(module, cls_name)()
            _instances[name] = backend
        return backend


def unavailable_reason(name: str) -> str | None:
    """None if `name` can start sandboxes on this machine now, else why not."""
    try:
        return get(name).unavailable_reason()
    except SandboxError as exc:
        return str(exc)


def available() -> list[str]:
    """The backends this machine can use now, in `KNOWN`'s order (the local one first)."""
    return [name for name in KNOWN if unavailable_reason(name) is None]


def default_name() -> str:
    """The backend of `CodeAgent(sandbox=None)`: `DEFAULT` (`local`). The app passes its AGENTDECK_SANDBOX by name."""
    return DEFAULT


def resolve(backend: str | SandboxBackend | None) -> SandboxBackend:
    """A backend from a name, an object, or None (the default); refuses one this machine cannot use."""
    if backend is None:
        backend = default_name()
    if isinstance(backend, str):
        why = None if backend in _usable else unavailable_reason(backend)
        if why is None:
            _usable.add(backend)
        else:
            if backend not in KNOWN:
                raise UnknownBackend(why)
            raise BackendUnavailable(f"the sandbox backend {backend!r} cannot be used here: {why}")
        return get(backend)
    if not isinstance(backend, SandboxBackend):
        raise TypeError(f"sandbox must be a backend name or a SandboxBackend, not {type(backend).__name__}")
    return backend
