"""The E2B sandbox backend (``AGENTDECK_SANDBOX=e2b``): backend.py (the backend), session.py (one sandbox through
the SDK), stream.py (the supervisor's stream over the command API), files.py (the file API with caps),
relay.py (runs in the sandbox), settings.py, errors.py. The `e2b` package is optional
(requirements-remote.txt); nothing here imports it until a sandbox is started or attached.
"""

from __future__ import annotations

from typing import Any

__all__ = ["E2BBackend", "E2BSettings"]


def __getattr__(name: str) -> Any:
    if name == "E2BBackend":
        from .backend import E2BBackend

        return E2BBackend
    if name == "E2BSettings":
        from .settings import E2BSettings

        return E2BSettings
    raise AttributeError(name)
