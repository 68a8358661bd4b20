"""The E2B backend (``AGENTDECK_SANDBOX=e2b``): each session's sandbox is a microVM of E2B's service.

What E2B adds and what it cannot: the boundary is E2B's microVM (its own kernel), created from the operator's
template with internet access off; the worker's own layers run inside it as on any machine. The app reaches it
only through the service: the supervisor (`agents.executor.remote.supervisor`, started by the command API) runs
beside the worker and watches it (freezing between steps, threads, CPU, disk), and its frames travel over the
command's stdin and stdout (`stream.py`); files move through the service's file API with caps (`files.py`).
Tool calls stay in the app: the supervisor relays their frames, so the sandbox needs no network.
A chat records the sandbox's id (`SandboxHost.id`); another replica reattaches it with `attach(id)`.
"""

from __future__ import annotations

import importlib.util
import threading
import weakref
from typing import Any

from ..backend import Capabilities, SandboxHost, SandboxSpec
from ..errors import SandboxError, SandboxStartError
from .session import E2BSession
from .settings import SETTING_NAMES, E2BSettings

NO_EXTRA_READ = ("the E2B sandbox cannot read folders of the app's machine (extra_read_paths); put the files "
                 "in the workspace instead")


def _settings_in_force() -> E2BSettings | None:
    from agents.host_settings import host_settings

    value = getattr(host_settings(), "e2b", None)
    return value if isinstance(value, E2BSettings) else None


class E2BBackend:
    """Sandboxes as E2B microVMs. `settings`: the service, key and template (None: what the app set with
    `configure_host(e2b=E2BSettings(...))`, read at each start so a later configuration applies)."""

    name = "e2b"
    capabilities = Capabilities(attach=True)  # replaced by the supervised host's own when the remote package loads

    def __init__(self, settings: E2BSettings | None = None) -> None:
        self._settings = settings
        self._live: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()
        try:
            from ..remote import SupervisedHost

            self.capabilities = SupervisedHost.capabilities
        except ImportError:
            pass

    @property
    def settings(self) -> E2BSettings | None:
        return self._settings if self._settings is not None else _settings_in_force()

    def unavailable_reason(self) -> str | None:
        if importlib.util.find_spec("e2b") is None:
            return "the e2b package is not installed: pip install -r requirements-remote.txt"
        settings = self.settings
        if settings is None:
            return (f"the E2B backend is not configured: set {SETTING_NAMES['api_key']} and "
                    f"{SETTING_NAMES['template']}")
        return settings.missing()

    def _ready_settings(self) -> E2BSettings:
        why = self.unavailable_reason()
        settings = self.settings
        if why is not None or settings is None:
            raise SandboxStartError(f"AGENTDECK_SANDBOX=e2b cannot start a sandbox: {why}")
        return settings

    def start(self, spec: SandboxSpec) -> SandboxHost:
        if spec.workspace is not None and spec.workspace.extra_read_paths:
            raise SandboxStartError(NO_EXTRA_READ)
        settings = self._ready_settings()
        name = spec.workspace.path if spec.workspace is not None else "warm"
        session = E2BSession.create(settings, session_name=name)
        try:
            session.start_supervisor()
            host = _supervised(session, spec)
        except BaseException:
            session.close()
            raise
        with self._lock:
            self._live[host.id] = host
        return host

    def attach(self, host_id: str) -> SandboxHost:
        """This process's live host of that id, else the sandbox at the service (another replica's, or this
        one's before a restart): reconnected, its supervisor's stream taken over. `SandboxError` if it is gone."""
        with self._lock:
            host = self._live.get(host_id)
        if host is not None and not host.dead:
            return host  # type: ignore[no-any-return]
        settings = self._ready_settings()
        session = E2BSession.connect(settings, host_id)
        session.reattach_supervisor()  # on failure the sandbox is left as it is: its lifetime ends it
        host = _supervised(session, None)
        with self._lock:
            self._live[host.id] = host
        return host  # type: ignore[no-any-return]


def _supervised(session: E2BSession, spec: SandboxSpec | None) -> Any:
    """The remote package's host over this session's stream and files (the same for every remote backend)."""
    try:
        from ..remote import SupervisedHost
    except ImportError as exc:
        raise SandboxError("the remote sandbox host (agents.executor.remote) is not available") from exc
    return SupervisedHost(session, spec)
