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

import dataclasses
import importlib.util
import logging
import os
import re
import secrets
import threading
import time
import weakref
from typing import Any

from ..backend import SandboxHost, SandboxLimits, SandboxSpec, WorkspaceSpec, attach_mismatch
from ..errors import SandboxError, SandboxStartError
from ..holds import HOLD_TTL_S, Hold, SandboxHolds
from ..protocol import ChannelClosed
from ..remote.held import HeldHost, HoldingBackend
from ..remote.host import CAPABILITIES as SUPERVISED
from ..remote.host import spec_to_json
from .errors import describe
from .session import E2BSession
from .settings import SETTING_NAMES, E2BSettings

log = logging.getLogger("agents.executor.e2b")
#: The supervised host's, plus attach by id; no warm starts (a pooled sandbox would be billed while it waits).
CAPABILITIES = dataclasses.replace(SUPERVISED, attach=True, warm_start=False, attach_elsewhere=True)
#: What an E2B sandbox id looks like (letters, digits, dashes); anything else read back from storage is refused.
SANDBOX_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,63}$")
NO_EXTRA_READ = ("the E2B sandbox cannot read folders of the app's machine (extra_read_paths); put the files "
                 "in the workspace instead")


def _settings_in_force() -> E2BSettings | None:
    from agents.host_settings import host_settings

    value = getattr(host_settings(), "e2b", None)
    return value if isinstance(value, E2BSettings) else None


class E2BBackend(HoldingBackend):
    """Sandboxes as E2B microVMs. `settings`: the service, key and template (None: what the app set with
    `configure_host(e2b=E2BSettings(...))`, read at each start so a later configuration applies). `holds`: where
    its sandboxes are held among replicas (None: the store the app configured; remote/held.py)."""

    name = "e2b"
    kind = "E2B"
    capabilities = CAPABILITIES

    def __init__(self, settings: E2BSettings | None = None, holds: SandboxHolds | None = None,
                 hold_ttl_s: float = HOLD_TTL_S) -> None:
        super().__init__(holds, hold_ttl_s)
        self._settings = settings
        self._live: weakref.WeakValueDictionary[str, E2BHost] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()

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
        session = E2BSession.create(settings, session_name=name, owner=spec.owner)
        try:
            stream = session.start_supervisor()
        except BaseException:
            session.close()
            raise
        hold = self.hold_new(session.id, discard=session.close)
        host = E2BHost(session, stream, spec, hold=hold)  # closes the session itself if the worker does not start
        with self._lock:
            self._live[host.id] = host
        return host

    def attach(self, host_id: str, expect: SandboxSpec | None = None,
               workspace: WorkspaceSpec | None = None) -> SandboxHost:
        """This process's live host of that id, else the sandbox at the service (another replica's, or this
        one's before a restart): reconnected, its supervisor's stream taken over. `SandboxError` if it is gone,
        its record does not verify (`E2BSession.load_record`), or (with `expect`) it was started for another
        owner or with other imports: then nothing of it is taken over. The record in the sandbox then names this
        host as its holder before the stream moves here, so the host that had it lets it go without killing it
        (`E2BHost.close`). The workspace is this replica's copy of the chat's files: `expect`'s, else
        `workspace` (as the k8s backend's attach takes it); neither: the folder the sealed record names."""
        if not isinstance(host_id, str) or not SANDBOX_ID.match(host_id):
            raise SandboxError(f"{str(host_id)[:80]!r} is not an E2B sandbox id")
        target = expect.workspace if expect is not None else workspace
        if target is not None and target.extra_read_paths:
            raise SandboxStartError(NO_EXTRA_READ)
        with self._lock:
            host = self._live.get(host_id)
        if host is not None and not host.dead:
            if expect is not None:  # a caller that checks is another session: two would share one worker
                raise self.in_use_here(host_id)
            held = host.spec.workspace.path if host.spec.workspace is not None else None
            if workspace is not None and held is not None \
                    and os.path.realpath(held) != os.path.realpath(workspace.path):
                raise SandboxError(f"E2B sandbox {host_id} serves another workspace here: not attached to this one")
            return host
        settings = self._ready_settings()
        if expect is not None and E2BSession.owner_of(settings, host_id) != expect.owner:
            # Before `connect`, which resumes a paused sandbox: another chat's is neither woken nor billed.
            raise SandboxError(f"the E2B sandbox {host_id} cannot be attached: it was started for another chat")
        # SandboxHeldElsewhere: another session, here or on another replica, holds it.
        return self.attach_held(host_id, lambda hold: self._attach_held(settings, host_id, hold, expect, target))

    def _attach_held(self, settings: E2BSettings, host_id: str, hold: Hold, expect: SandboxSpec | None,
                     target: WorkspaceSpec | None) -> SandboxHost:
        """`attach`'s part under this host's hold: nobody else attaches or closes the sandbox meanwhile."""
        session = E2BSession.connect(settings, host_id)  # resumes a paused sandbox
        record = session.load_record()
        spec, ready = spec_from_record(record)
        if expect is not None:
            why = attach_mismatch(spec, expect)
            if why is not None:
                session.disconnect()
                raise SandboxError(f"the E2B sandbox {host_id} cannot be attached: {why}")
        if target is not None:
            spec = dataclasses.replace(spec, workspace=target)
        session.save_record({**record, "holder": hold.token})  # the record names the host that holds it now
        try:
            stream = session.reattach_supervisor()
        except SandboxError:
            if expect is not None:  # the caller's own sandbox, of no use without its worker: nothing left running
                session.close()
            raise  # without `expect` it may be anyone's: left as it is, its lifetime ends it
        host = E2BHost(session, stream, spec, attached_ready=ready, hold=hold)
        with self._lock:
            self._live[host.id] = host
        return host


def spec_from_record(record: dict[str, Any]) -> tuple[SandboxSpec, dict[str, Any]]:
    """The spec and ready frame a host recorded in its sandbox (root's file, but checked all the same)."""
    try:
        raw, ready, workspace = record["spec"], record["ready"], record["workspace"]
        limits = SandboxLimits(**{k: v for k, v in raw["limits"].items() if k in SandboxLimits.__dataclass_fields__})
        spec = SandboxSpec(workspace=WorkspaceSpec(str(workspace)),
                           authorized_imports=tuple(str(i) for i in raw["authorized_imports"]), limits=limits,
                           tools=tuple(str(t) for t in raw["tools"]),
                           env={str(k): str(v) for k, v in raw["env"].items()},
                           use_landlock=bool(raw["use_landlock"]), use_seccomp=bool(raw["use_seccomp"]),
                           private_root=bool(raw["private_root"]), python_layers=bool(raw["python_layers"]),
                           owner=str(record.get("owner") or "")[:200])
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise SandboxError(f"the E2B sandbox's record cannot be read back: {type(exc).__name__}") from exc
    if not isinstance(ready, dict) or ready.get("op") != "ready":
        raise SandboxError("the E2B sandbox's record holds no ready worker")
    return spec, ready


class E2BHost(HeldHost):
    """The remote package's host over one E2B sandbox, renewing the sandbox's lifetime as steps come (at most
    once a quarter of `timeout_s`), so an active chat's sandbox never times out and an abandoned one does."""

    capabilities = CAPABILITIES

    def __init__(self, session: E2BSession, stream: Any, spec: SandboxSpec,
                 attached_ready: dict[str, Any] | None = None, hold: Hold | None = None) -> None:
        self.session = session
        self.holder = hold.token if hold is not None else secrets.token_hex(16)  # the record names it too
        self._renewed = time.monotonic()
        self._attaching = attached_ready is not None  # the worker runs already: no `start` for the supervisor
        super().__init__(stream, session.files, host_id=session.id, on_close=self._end_sandbox, spec=spec,
                         hold=hold)
        self._attaching = False
        if attached_ready is not None:
            self._ready = attached_ready
            self._frozen = True  # left frozen between steps by the host it was; the next send thaws it

    def kill(self) -> None:
        """As the supervised host's, unless this host's hold on the sandbox is lost (another session holds it
        now): then nothing is signalled to the supervisor or killed; this host only lets go of its connection."""
        if not self._killed and not self.dead and not self.hold_kept():
            self._let_go()
            return
        super().kill()

    def close(self) -> None:
        if not self._closed and not self.hold_kept():
            self._let_go()
        super().close()

    def _let_go(self) -> None:
        log.info("E2B sandbox %s is held by another session: this host lets it go", self.id)
        self.let_go = True
        self._killed = True
        self._on_close = None
        self.session.disconnect()
        self._link.fail("the sandbox is held by another session now (the chat was opened elsewhere)")

    def _call(self, op: str, extra_wait: float = 0.0, **args: Any) -> dict[str, Any]:
        if op == "start" and self._attaching:
            return {}
        self._check_held()
        return super()._call(op, extra_wait, **args)

    def _check_held(self) -> None:
        """Before anything goes to the supervisor: a host whose hold is lost (another replica attached the
        sandbox after this one stalled) lets go and raises `StreamClosed`. The supervisor's stdin is anyone's
        with the sandbox, and its output reaches every connection: a control request from here would be
        answered on the holder's stream too (a reply it never asked for fails its link and kills its sandbox),
        and a freeze or an interrupt would stop the holder's running step."""
        if self.hold_lost():
            self._let_go()
        if self.let_go:
            raise self._link.error()

    def interrupt(self) -> None:
        try:
            self._check_held()
        except ChannelClosed:
            return
        super().interrupt()

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        first = self.ready is None
        ready = super().wait_ready(timeout)
        if first and self.spec.workspace is not None:
            self.session.save_record({"spec": spec_to_json(self.spec), "workspace": self.spec.workspace.path,
                                      "ready": ready, "owner": self.spec.owner, "holder": self.holder})
        return ready

    def _end_sandbox(self) -> None:
        """`close`'s end: kill the sandbox at the service, unless another host (another replica's) attached it
        since, as its record says (or its hold is lost): that one holds it now, and this host only lets go of its
        connection. The kill happens under a hold renewed just before, released after (`HeldHost._end_held`)."""
        self._end_held(self._check_and_kill)

    def _check_and_kill(self) -> None:
        if self.ready is not None:
            try:
                holder = self.session.load_record().get("holder")
            except SandboxError:
                holder = None  # gone, or unreadable: killed as usual
            if isinstance(holder, str) and holder and holder != self.holder:
                log.info("E2B sandbox %s was attached elsewhere: this host lets it go", self.id)
                self.let_go = True
                self.session.disconnect()
                return
        self.session.close()

    def suspend(self) -> bool:
        """Pause the sandbox at E2B while nobody needs it (a run waiting on a person's decision): the worker is
        frozen first, then the microVM is paused with its memory, so the worker's variables, the supervisor and
        the files are held and no CPU is used; the service ends open connections. False where the settings turn
        it off (`pause_on_suspend`); the sandbox then keeps running, frozen, until its lifetime ends."""
        if self.dead:
            return False
        self.freeze()
        return self.session.pause()

    def resume(self) -> None:
        """Resume a suspended sandbox (the SDK's connect) and follow the supervisor's output on a new connection;
        the worker thaws on the next step's bytes."""
        if not self.session.paused:
            return
        self.session.resume()
        stream = self.session.stream
        if stream is not None:
            try:
                stream.follow(self.session.sandbox.commands.connect(stream.pid, timeout=0))
            except Exception as exc:
                self.kill()
                raise SandboxError(describe(exc, f"{self.session.hint}could not follow the supervisor again: ")) \
                    from exc

    def _before_send(self) -> None:
        """Each step (once its hold is checked, `HeldHost.send`) renews the sandbox's lifetime now and then."""
        if time.monotonic() - self._renewed > self.session.settings.timeout_s / 4 and not self.dead:
            self._renewed = time.monotonic()
            try:
                self.session.renew()
            except SandboxError as exc:  # the stream says the rest when the sandbox is really gone
                log.warning("%s", exc)
