"""The local sandbox backend: a confined worker process on the app's own machine (see host.py)."""

from .host import LocalBackend, LocalHost

__all__ = ["LocalBackend", "LocalHost"]
