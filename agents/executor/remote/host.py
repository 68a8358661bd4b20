"""`SupervisedHost`: a `SandboxHost` over one byte stream to a supervisor inside a remote sandbox.

Why: a remote backend (E2B, Kubernetes) can give the app only a stream and a file API; the watch the local
backend reads from `/proc` (freezing between steps, threads left running, CPU time, disk use) must be read
inside the sandbox by the supervisor (`supervisor.py`), which runs beside the worker as another user and answers
control requests. This host turns the protocol's methods into worker frames and control requests on that stream
(`link.py`, framing `wire.py`) and checks every answer: types, ranges, sizes, its request's id, its deadline.

Compose a backend from it (see `interface.py` for the steps):

    host = SupervisedHost(stream, files, host_id=sandbox_id, on_close=delete_the_sandbox, spec=spec)

`on_close` is called once, from `close()`: it must end the remote sandbox (delete the pod or the microVM) and
never raise. `start` sends the spec to the supervisor, which starts the worker (cold: with the session's
settings; a spec without a workspace: warm, its libraries loaded, the settings at `assign`). The workspace lives
in the sandbox; `WorkspaceSpec.path` on the app's machine is kept as a copy (`files.py`).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..artifacts import Snapshot
from ..backend import SEND_DEADLINE_S, Capabilities, SandboxHost, SandboxSpec
from ..errors import SandboxError, SandboxStartError
from ..execution_result import ExecutionResult, lose_state
from ..local import worker_watch
from ..local.disk_limit import tell_over
from ..protocol import ChannelClosed, ProtocolError, frame
from .files import RemoteWorkspace
from .interface import ByteStream, RemoteFiles
from .link import RemoteError, StreamLink

log = logging.getLogger("agents.executor.remote")
CAPABILITIES = Capabilities(suspend=True, thread_check=True, cpu_time=True, disk_usage=True, same_disk=False,
                            attach=False, warm_start=True)
MAX_TOO_DEEP = 10_000_000  # files too deep to name, as the supervisor counts them: more is a malformed reply
CONTROL_TIMEOUT_S = 10.0  # a control reply later than this (plus the request's own wait) kills the sandbox


def spec_to_json(spec: SandboxSpec) -> dict[str, Any]:
    """What the supervisor needs of a spec to build the worker's settings (the workspace is the sandbox's own)."""
    return {"authorized_imports": list(spec.authorized_imports), "limits": dataclasses.asdict(spec.limits),
            "tools": sorted(spec.tools), "env": {str(k): str(v) for k, v in spec.env.items()},
            "use_landlock": spec.use_landlock, "use_seccomp": spec.use_seccomp,
            "private_root": spec.private_root, "python_layers": spec.python_layers}


class SupervisedHost(RemoteWorkspace):
    """One remote sandbox's worker, watched by its supervisor, reached over one stream."""

    capabilities = CAPABILITIES

    def __init__(self, stream: ByteStream, files: RemoteFiles, *, host_id: str, on_close: Callable[[], None],
                 spec: SandboxSpec, control_timeout_s: float = CONTROL_TIMEOUT_S) -> None:
        if spec.workspace is not None and spec.workspace.extra_read_paths:
            raise SandboxStartError("a remote sandbox cannot read folders of the app's machine (extra_read_paths)")
        self.id = host_id
        self.spec = spec
        self._on_close: Callable[[], None] | None = on_close
        self._timeout = control_timeout_s
        self._ready: dict[str, Any] | None = None
        self._killed = False
        self._closed = False
        self._frozen = False
        self._assigned = spec.workspace is not None
        self._still = threading.RLock()  # held by a file operation, a step's start and its end
        self._init_files(files)
        self._link = StreamLink(stream)
        try:
            self._call("start", spec.limits.startup_timeout_s, spec=spec_to_json(spec),
                       warm=spec.workspace is None)
            if spec.workspace is not None:
                self._workspace_assigned(spec.workspace.path)
        except (ChannelClosed, RemoteError, OSError) as exc:
            self.close()
            raise SandboxStartError(f"the remote sandbox {host_id} did not start its worker: {exc}") from exc

    def _call(self, op: str, extra_wait: float = 0.0, **args: Any) -> dict[str, Any]:
        return self._link.call(op, self._timeout + extra_wait, **args)

    def _value(self, op: str, kind: type, extra_wait: float = 0.0, **args: Any) -> Any:
        """A control reply's `value`, of `kind` (None allowed for `str`); anything else kills the sandbox."""
        reply = self._call(op, extra_wait, **args)
        value: Any = reply.get("value")
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if kind is str and value is None:
            return None
        if kind is float and ok and not (math.isfinite(value) and 0 <= value < 1e9):
            ok = False
        if kind is str and ok and len(value) > 2000:
            ok = False
        if not ok:
            self._link.fail(f"the sandbox's supervisor answered {op!r} with {str(value)[:60]!r}", misbehaved=True)
            raise self._link.error()
        return value

    def assign(self, spec: SandboxSpec) -> None:
        if self._assigned or self.dead or spec.workspace is None:
            raise SandboxStartError("this sandbox cannot be assigned a workspace (already assigned, or gone)")
        if spec.workspace.extra_read_paths:
            raise SandboxStartError("a remote sandbox cannot read folders of the app's machine (extra_read_paths)")
        self._assigned = True
        self.spec = spec
        try:
            self._workspace_assigned(spec.workspace.path)
            self._call("assign", spec=spec_to_json(spec))
        except (ChannelClosed, RemoteError, OSError) as exc:
            self.kill()
            raise SandboxStartError(f"the warm remote sandbox did not take its session: {exc}") from exc

    # --- facts ---------------------------------------------------------------------------------------------------
    @property
    def ready(self) -> dict[str, Any] | None:
        return self._ready

    @property
    def dead(self) -> bool:
        return self._killed or self._link.failure is not None or self._link.worker_exit is not None

    # --- the channel -----------------------------------------------------------------------------------------
    def wait_ready(self, timeout: float) -> dict[str, Any]:
        if self._ready is not None:
            return self._ready
        try:
            msg = self._link.read_worker(timeout, None)
        except (ChannelClosed, ProtocolError) as exc:
            tail = self._log_tail()
            self.kill()
            raise SandboxStartError(f"the remote sandbox's worker failed to start: {exc}. {tail}") from exc
        if msg is not None and msg.get("op") == "refused":
            self.kill()
            raise SandboxStartError(f"the sandbox refused to start: {str(msg.get('error'))[:1000]}")
        if msg is None or msg.get("op") != "ready":
            tail = self._log_tail()
            self.kill()
            raise SandboxStartError(f"the remote sandbox's worker did not become ready. {tail}")
        self._ready = msg
        return msg

    def _log_tail(self) -> str:
        try:
            text = self._value("log", str)
        except (ChannelClosed, RemoteError):
            return ""
        return f"Worker log: {text}" if text else ""

    def send(self, msg: dict[str, Any], deadline_s: float = SEND_DEADLINE_S) -> None:
        with self._still:  # after a file operation in progress (`_worker_still`)
            self._frozen = False  # the supervisor thaws the worker before it hands it the bytes
            self._link.send_worker(frame(msg), deadline_s)

    def read(self, timeout: float | None = None, wake_fd: int | None = None,
             spin_s: float = 0.0) -> dict[str, Any] | None:
        return self._link.read_worker(timeout, wake_fd)

    def has_pending(self) -> bool:
        if self._link.pending():
            return True
        # Asked of the supervisor: its reply comes after every worker byte it read before, so a worker that wrote
        # just before it was frozen is seen either in the buffer or in the supervisor's answer.
        return bool(self._value("pending", bool)) or self._link.pending()

    # --- the watch (answered by the supervisor, from outside the worker) ------------------------------------
    def freeze(self) -> None:
        with self._still:  # a step's end waits for a file operation that stopped the worker to let it go on
            if not self._frozen and not self.dead:
                self._call("freeze")
                self._frozen = True

    def thaw(self) -> None:
        if self._frozen and not self.dead:
            self._call("thaw")
            self._frozen = False

    @contextmanager
    def _worker_still(self) -> Iterator[None]:
        """One file operation with the worker stopped: between steps it is frozen, and no step starts (`send`)
        or ends (`freeze`) meanwhile; during a step (a tool the code called, a tab reading the files) it is
        frozen for the operation and then goes on, so code running then cannot swap a checked file for a link."""
        with self._still:
            froze = not (self._frozen or self.dead or self._ready is None)
            if froze:
                self.freeze()
            try:
                yield
            finally:
                if froze:
                    self.thaw()

    def woke_up(self) -> bool:
        return self._frozen and not self.dead and bool(self._value("woke_up", bool))

    def cpu_seconds(self) -> float:
        return 0.0 if self.dead else float(self._value("cpu", float))

    def thread_left_running(self, sample_s: float) -> bool:
        if self.dead:
            return False
        return bool(self._value("threads", bool, extra_wait=sample_s + 1.0, sample_s=float(sample_s)))

    def end_of_run(self, sample_s: float) -> tuple[bool, float]:
        left = self.thread_left_running(sample_s)
        return left, self.cpu_seconds()

    def disk_over(self) -> str | None:
        if self._link.failure is not None or not self._assigned:
            return None
        why: str | None = self._value("disk", str, extra_wait=5.0)
        return why

    def check_disk_after_run(self, result: ExecutionResult, workspace: Snapshot | None = None) -> bool:
        if not self._assigned:
            return False
        if self._link.failure is not None:
            # Only the supervisor can count the files the run left, and the stream dropped after the run's result
            # (the download of its files before the count takes a minute for a few hundred): uncounted, they
            # count as over the limits, and the sandbox is gone with its variables (True: a new one is started).
            limits = self.spec.limits
            down = worker_watch.uncounted(f"the stream to its supervisor is down: {self._link.failure[:300]}",
                                          int(limits.max_disk_files), int(limits.max_disk_mb))
            tell_over(result, down, False)
            lose_state(result, "the connection to the sandbox was lost after the step, so it was started again")
            return True
        reply = self._call("disk_after", 5.0)
        why, tmp_used, too_deep = reply.get("value"), reply.get("tmp_used"), reply.get("too_deep", 0)
        if not (why is None or isinstance(why, str)) or not isinstance(tmp_used, bool) or \
                type(too_deep) is not int or not 0 <= too_deep <= MAX_TOO_DEEP:
            self._link.fail("the sandbox's supervisor answered 'disk_after' with an invalid reply", misbehaved=True)
            raise self._link.error()
        # The service's file API names files by path: those deeper than a path can name are only counted there.
        for note in Snapshot(too_deep=too_deep).notes():
            result.logs += f"\n[sandbox] {note}."
        if why is None:
            return False
        tell_over(result, why[:1000], tmp_used)
        return tmp_used

    def set_min_free_mb(self, value: int) -> None:
        self.spec = dataclasses.replace(self.spec, limits=dataclasses.replace(self.spec.limits,
                                                                              min_free_mb=int(value)))
        if not self.dead:
            self._call("min_free", value=int(value))

    def interrupt(self) -> None:
        if not self.dead:
            try:
                self._link.signal(b"I")
            except ChannelClosed:
                pass

    def exit_description(self, wait_s: float = 1.0) -> str:
        if self._link.worker_exit is not None:
            return self._link.worker_exit
        if self._link.failure is not None:
            return self._link.failure
        try:
            return str(self._value("exit", str, extra_wait=wait_s, wait_s=float(wait_s)) or "still running")
        except (ChannelClosed, RemoteError) as exc:
            return str(exc)

    def kill(self) -> None:
        """The supervisor kills the worker on `K` and again when its stdin ends; the stream is closed either way."""
        if self._killed:
            return
        self._killed = True
        try:
            self._link.signal(b"K")
        except ChannelClosed:
            pass
        self._link.fail(self._link.worker_exit and f"the sandbox worker {self._link.worker_exit}"
                        or "the sandbox worker was killed")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if hasattr(self, "_link"):
            self.kill()
            self._link.close()
        callback, self._on_close = self._on_close, None
        if callback is not None:
            try:
                callback()
            except Exception as exc:  # the backend's to report; closing must not fail the app
                log.warning("closing remote sandbox %s failed: %s", self.id, exc)

    def memory_bytes(self) -> int | None:
        if self.dead:
            return None
        try:
            reply = self._call("memory")
        except (ChannelClosed, RemoteError):
            return None
        value = reply.get("value")
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    def security_report(self) -> dict[str, dict[str, Any]]:
        from .report import security_report

        return security_report(self.id, self.spec.limits)


def _conforms(host: SupervisedHost) -> SandboxHost:
    """Checked by mypy: the class implements the protocol (no runtime cost)."""
    return host


__all__ = ["CONTROL_TIMEOUT_S", "SandboxError", "SupervisedHost", "spec_to_json"]
