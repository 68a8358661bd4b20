"""The Docker sandbox backend (``AGENTDECK_SANDBOX=docker``): host.py (backend and host), container.py (one
container and its channel), image.py (the sandbox image), daemon.py (reaching an engine; the private one).

``DockerBackend`` is loaded on first use, so ``python -m agents.executor.docker.daemon`` and ``.image`` run their
module without importing the rest first.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DockerBackend", "DockerHost"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import host

        return getattr(host, name)
    raise AttributeError(name)
