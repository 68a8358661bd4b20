"""The Docker sandbox backend (``AGENTDECK_SANDBOX=docker``): backend.py (the engine, the image, starting and
sweeping), host.py (one sandbox's host), container.py (one
container and its channel), image.py (the sandbox image), daemon.py (reaching an engine; the private one).

``DockerBackend`` is loaded on first use, so ``python -m agents.executor.docker.daemon`` and ``.image`` run their
module without importing the rest first.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DockerBackend", "DockerHost"]


def __getattr__(name: str) -> Any:
    if name == "DockerBackend":
        from .backend import DockerBackend

        return DockerBackend
    if name == "DockerHost":
        from .host import DockerHost

        return DockerHost
    raise AttributeError(name)
