"""The Kubernetes sandbox backend (``AGENTDECK_SANDBOX=k8s``): a kubernetes-sigs/agent-sandbox claim per session.

settings.py (what the app passes), api.py (the client configuration), claims.py (claim, wait, pod, delete),
exec_stream.py (a process in the pod as a byte stream), files.py with pod_files_script.py (the workspace's files
by exec), backend.py (the backend and its hosts). Loaded on first use: the `kubernetes` package is optional
(requirements-remote.txt) and importing this package does not need it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["K8sSandboxBackend"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import backend

        return getattr(backend, name)
    raise AttributeError(name)
