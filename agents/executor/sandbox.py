"""PythonSandbox: the app-side handle on one sandboxed worker, whatever backend runs it.

The app calls ``run(code)``; the sandbox sends it to the worker (which checks it: layer 1), watches the run
(run_watch.py: tool calls served in this process by tool_calls.py, the timeout on the worker's compute time,
interrupts), checks that nothing of the step outlived it, and reports files the run left in the workspace
and whether the disk limit holds. It owns the worker's life: start, restart, close. How the worker is started
and watched is its backend's (backend.py; the local one is local/), reached only through the host it returns.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from . import artifacts as _artifacts
from . import backends, execution_result
from . import pool as _pool
from .backend import SandboxBackend, SandboxHost, SandboxLimits, SandboxSpec, WorkspaceSpec
from .errors import InvalidVariableError, SandboxClosedError, SandboxError, SandboxStartError
from .execution_result import ExecutionResult
from .pool import WarmPool
from .protocol import ChannelClosed, ProtocolError, encode_json, ready_problem
from .run_watch import RunWatch
from .tool_calls import check_tool_names, serve_tool_call

log = logging.getLogger("agents.executor")
# How long a thread left after a step may take to park or end: the check stops as soon as none runs, and a
# loaded machine can take tens of ms to reap an ended one.
THREAD_SAMPLE_S = 0.5
IDLE_CPU_S = 0.25  # CPU a worker may use between two runs (bookkeeping only) before it counts as busy


class PythonSandbox:
    """Runs model-written Python in a confined worker process; state persists between runs.

    Artifacts are reported with ``path`` relative to ``workdir`` and ``abs_path``. ``backend``: a backend name
    (``backends.KNOWN``), a `SandboxBackend`, or None for ``backends.DEFAULT`` (local; the app passes its own by name).
    """

    def __init__(self, workdir: str, authorized_imports: Iterable[str] = (), timeout_s: float = 30,
                 memory_limit_mb: int = 1024, max_output_chars: int = 20000,
                 max_file_size_mb: int = 100, max_files_written: int = 200,
                 env: dict[str, str] | None = None, on_log: Callable[[str], None] | None = None,
                 max_result_chars: int = 100_000, max_open_files: int = 256,
                 extra_read_paths: Iterable[str] = (), use_landlock: bool = True, use_seccomp: bool = True,
                 startup_timeout_s: float = 120, nice: int = 5, max_disk_mb: int = 1024,
                 private_root: bool = True, python_layers: bool = True, max_disk_files: int = 20_000,
                 min_free_mb: int = 0, backend: str | SandboxBackend | None = None,
                 pool: bool | WarmPool = False, owner: str = "", attach: str | None = None) -> None:
        """`owner`: the tag the sandbox records as whose it is (`SandboxSpec.owner`). `attach`: the id of a running
        sandbox to take (`SandboxBackend.attach`, which checks it was started for `owner` with these imports and
        layers) instead of starting one; `SandboxError` if the backend cannot."""
        self.backend = backends.resolve(backend)
        # Warm starts (pool.py): a worker started ahead of time, taken once; True is the process's pool.
        self._pool = _pool.for_backend(self.backend) if pool is True else (pool or None)
        os.makedirs(workdir, exist_ok=True)
        self.workdir = os.path.realpath(workdir)
        self.authorized_imports = list(authorized_imports)
        self.timeout_s = timeout_s
        self.on_log = on_log
        self.startup_timeout_s = startup_timeout_s
        self.limits = SandboxLimits(
            timeout_s=timeout_s, memory_limit_mb=int(memory_limit_mb), max_output_chars=int(max_output_chars),
            max_result_chars=int(max_result_chars), max_file_size_mb=int(max_file_size_mb),
            max_files_written=int(max_files_written), max_open_files=int(max_open_files),
            max_disk_mb=int(max_disk_mb), max_disk_files=int(max_disk_files), min_free_mb=int(min_free_mb),
            nice=max(0, min(19, int(nice))), startup_timeout_s=startup_timeout_s)
        self.spec = SandboxSpec(
            workspace=WorkspaceSpec(self.workdir, tuple(os.path.realpath(p) for p in extra_read_paths)),
            authorized_imports=tuple(self.authorized_imports), limits=self.limits, env=dict(env or {}),
            use_landlock=use_landlock, use_seccomp=use_seccomp, private_root=private_root,
            python_layers=bool(python_layers), owner=str(owner))
        self._tools: dict[str, Callable[..., Any]] = {}
        self._run_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        os.set_blocking(self._wake_r, False)
        self._interrupt = False
        self._running = False
        self._closed = False
        self._step = 0
        self._warned = False
        self._ended_between: str | None = None  # why the last host ended between steps (a remote one can tell)
        self._idle_cpu: float | None = None  # the worker's CPU time when its last run ended (the host's reading)
        self._host: SandboxHost | None = None
        #: The first host was attached with its worker running (its variables kept), not started.
        self.attached_with_state = False
        if attach is not None:
            if not self.backend.capabilities.attach:
                raise SandboxError(f"the sandbox backend {self.backend.name!r} cannot attach a sandbox")
            host = self.backend.attach(attach, expect=self.spec)
            self.attached_with_state = host.ready is not None
            self._host = host
        else:
            self._host = self._spawn()

    @property
    def max_disk_mb(self) -> int:
        return self.limits.max_disk_mb

    @property
    def max_disk_files(self) -> int:
        return self.limits.max_disk_files

    @property
    def min_free_mb(self) -> int:
        """The shared disk's floor: below that much free space, code that writes is stopped (0: no floor)."""
        return self.limits.min_free_mb

    @min_free_mb.setter
    def min_free_mb(self, value: int) -> None:
        self.limits = dataclasses.replace(self.limits, min_free_mb=int(value))
        self.spec = dataclasses.replace(self.spec, limits=self.limits)
        with self._state_lock:
            if self._host is not None:
                self._host.set_min_free_mb(int(value))

    @property
    def host(self) -> SandboxHost | None:
        """The backend's handle on the current worker (None while closed); replaced by every restart."""
        return self._host

    @property
    def _worker(self) -> SandboxHost | None:  # the tests' name for it (local: `.pid`)
        return self._host

    @property
    def _tmpdir(self) -> str:
        """The current worker's private temp folder (local backend; for tests)."""
        return str(getattr(self._host, "tmpdir", ""))

    # --- lifecycle ------------------------------------------------------------
    def _spawn(self) -> SandboxHost:
        self._idle_cpu = None
        spec = dataclasses.replace(self.spec, tools=tuple(sorted(self._tools)))
        host = self._pool.take(spec) if self._pool is not None else None
        return host if host is not None else self.backend.start(spec)

    def _ready_worker(self) -> SandboxHost:
        with self._state_lock:
            if self._closed:
                raise SandboxClosedError("the sandbox is closed")
            if self._host is None or self._host.dead:
                if self._host is not None:
                    if self._host.ready is not None:  # it held the session's variables: the next step is told
                        self._ended_between = (f"the sandbox ended between steps "
                                               f"({self._host.exit_description(0.5)[:500]}) and was started again")
                    self._host.close()
                self._host = self._spawn()
            worker = self._host
        first = worker.ready is None
        ready = worker.wait_ready(self.startup_timeout_s)
        if first or not self._warned:  # a new worker, or one attached with the frame it sent then
            problem = ready_problem(ready)
            if problem is not None:
                worker.kill()
                raise SandboxStartError(f"the sandbox worker's ready frame was refused: {problem}")
        if first:
            worker.freeze()  # idle until the app sends it something
        if not self._warned:
            self._warned = True
            for warning in ready.get("warnings", []):
                log.warning("sandbox: %s", warning)
            for layer in ready.get("layers", []):
                if not layer["active"]:
                    log.warning("sandbox isolation layer '%s' is NOT active: %s", layer["name"], layer["detail"])
        return worker

    def _restart(self) -> None:
        """A fresh worker on a fresh host: nothing of the old one (temp folder, memory, user id) is kept."""
        with self._state_lock:
            old, self._host = self._host, None
            if old is not None:
                old.kill()
                old.close()
            self._host = None if self._closed else self._spawn()

    def reset(self) -> None:
        """Forget all state (variables, imports, functions) by starting a fresh worker."""
        with self._run_lock:
            self._restart()

    def close(self) -> None:
        """Stop the worker and delete the private temp folder (idempotent; the workspace stays)."""
        with self._state_lock:
            if self._closed:
                return
            self._closed = True
            host, self._host = self._host, None
        if host is not None:
            host.close()
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self) -> PythonSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    # --- security report -------------------------------------------------------
    def security_report(self) -> dict[str, dict[str, Any]]:
        """Every isolation layer with whether it is active here and what it does."""
        ready = self._ready_worker().ready or {}
        report: dict[str, dict[str, Any]] = {
            "ast_guard": {"active": True, "detail": "code checked and rewritten before compiling"},
            "import_policy": {"active": True, "detail": "module views; authorized: "
                              + (", ".join(self.authorized_imports) or "safe defaults only")},
            "backend": {"active": True, "detail": f"sandbox backend {self.backend.name!r}"},
        }
        host = self._host
        if host is not None:
            report.update(host.security_report())
        for layer in ready.get("layers", []):  # the worker's own say: never in place of the app's or the host's
            report.setdefault(layer["name"], {"active": layer["active"], "detail": layer["detail"]})
        return report

    @property
    def active_layers(self) -> list[str]:
        return [name for name, info in self.security_report().items() if info["active"]]

    # --- tools and variables -----------------------------------------------------
    def register_tools(self, tools: dict[str, Callable[..., Any]]) -> None:
        """Make callables available to the code by name; they run in this (the app's) process."""
        check_tool_names(tools)
        with self._run_lock:
            self._tools.update(tools)
            worker = self._ready_worker()
            try:
                worker.send({"op": "tools", "names": sorted(self._tools)})
            except ChannelClosed:
                self._restart()  # the new worker is started with the tools
                return
            worker.freeze()  # it reads the message when it is thawed for its next run

    def send_variables(self, variables: dict[str, Any]) -> None:
        """Bind JSON-able values as variables of the code's namespace."""
        for name in variables:
            if not (isinstance(name, str) and name.isidentifier()) or name.startswith("_") or name in self._tools:
                raise InvalidVariableError(f"cannot bind variable {name!r}")
        try:
            encode_json(variables)
        except (TypeError, ValueError) as exc:
            raise InvalidVariableError(f"variables must be JSON-serialisable: {exc}") from exc
        with self._run_lock:
            worker = self._ready_worker()
            try:
                worker.send({"op": "vars", "values": variables})
                msg = worker.read(timeout=self.startup_timeout_s)
            except (ChannelClosed, ProtocolError):
                msg = {"op": "broken"}
            if msg is not None and msg.get("op") != "vars_done":
                self._restart()  # anything else is not what was asked: the worker is not trusted any more
                raise InvalidVariableError("the sandbox worker misbehaved and was restarted; variables are lost")
            worker.freeze()
            if msg is None or not msg.get("ok"):
                raise InvalidVariableError((msg or {}).get("error", "the worker did not answer"))

    # --- running code ----------------------------------------------------------------
    def interrupt(self) -> None:
        """Stop the running code soon (KeyboardInterrupt first, then a worker restart)."""
        if self._running:
            self._interrupt = True
            try:
                os.write(self._wake_w, b"!")
            except OSError:
                pass

    def run(self, code: str, on_log: Callable[[str], None] | None = None,
            cancel: threading.Event | None = None,
            tools: Mapping[str, Callable[..., Any]] | None = None) -> ExecutionResult:
        """Run ``code`` in the sandbox; never raises for problems of the code itself.

        ``cancel`` is the caller's stop flag: when it is set (even before the worker is up, or before this
        call started), the code is interrupted as by ``interrupt()``. ``interrupt()`` alone only acts on a
        run already in progress, so callers that can be stopped at any moment should pass ``cancel``.
        ``tools``: the callables this run's tool calls go to, by name, in place of the registered ones (an
        agent binds them to its run); only names given to ``register_tools`` can be called.
        """
        on_log = on_log or self.on_log
        with self._run_lock:
            started = time.monotonic()
            # The code is checked (and rewritten) in the worker; that check gives clear errors, the kernel
            # layers make it safe. Checking here too would add nothing but a third of a tiny step's time.
            worker = self._ready_worker()
            ended_between, self._ended_between = self._ended_between, None
            notes: list[str] = []
            cpu_now: float | None = None  # the frozen worker's CPU time: also where this run's count starts
            if worker.ready is not None:
                # Between runs a worker has nothing to say and nothing to compute: either comes from code
                # the previous step left behind.
                if worker.capabilities.cpu_time:
                    cpu_now = worker.cpu_seconds()
                if worker.has_pending():
                    notes.append("the previous step's code kept writing to the sandbox's channel after it ended")
                elif worker.woke_up():
                    notes.append("the previous step's code woke the sandbox up between steps")
                elif self._idle_cpu is not None and cpu_now is not None and cpu_now - self._idle_cpu > IDLE_CPU_S:
                    notes.append("the previous step's code kept using the CPU after it ended")
                if notes:
                    self._restart()
                    worker = self._ready_worker()
                    cpu_now = None
            not_given, before = worker.push_and_snapshot()
            self._step += 1
            run_id = secrets.token_hex(8)
            self._interrupt = False
            self._running = True
            try:
                request = {"op": "run", "id": run_id, "code": code, "step": self._step,
                           "timeout_s": self.timeout_s, "stream": on_log is not None}
                # Built per run: a watch kept on the sandbox would hold it in a reference cycle (no prompt close()).
                watch = RunWatch(worker, self._wake_r, lambda: self._interrupt, self._restart, self._disk_over,
                                 self.limits.max_output_chars, self.limits.max_result_chars,
                                 self.limits.memory_limit_mb)
                result = watch.run(request, self.timeout_s, on_log, cancel,
                                   lambda msg: serve_tool_call(msg, self._tools, tools), cpu_now)
            finally:
                self._running = False
                self._interrupt = False
            left, idle_cpu = bool(result.threads_left), None
            if not result.state_lost and not left and not worker.dead:
                left, idle_cpu = worker.end_of_run(THREAD_SAMPLE_S)  # one reading of the kernel's, where it can
            if not result.state_lost and left:
                self._restart()
                execution_result.lose_state(result, "a thread it started was still running when the step ended, so the "
                                         "sandbox was restarted to stop it")
            if not worker.dead:
                if worker.capabilities.cpu_time:
                    self._idle_cpu = worker.cpu_seconds() if idle_cpu is None else idle_cpu
                worker.freeze()
            for note in notes:
                execution_result.lose_state(result, note + "; the sandbox was restarted")
            if ended_between is not None and not result.state_lost:
                execution_result.lose_state(result, ended_between)
            host = self._host if self._host is not None else worker
            host.pull_workspace()
            after = host.snapshot()
            result.artifacts = _artifacts.diff(self.workdir, before, after)
            for why in ([not_given] if not_given else []) + after.notes():
                result.logs += f"\n[sandbox] {why}."
            if host.check_disk_after_run(result, after):
                self._restart()  # a new host starts with an empty temp folder
            result.duration_s = time.monotonic() - started
            return result

    def _disk_over(self) -> str | None:
        host = self._host
        return None if host is None else host.disk_over()
