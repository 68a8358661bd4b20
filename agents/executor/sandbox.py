"""PythonSandbox: the app-side handle on one sandboxed worker.

The app calls ``run(code)``; the sandbox checks the code (layer 1, trusted
copy), sends it to the worker, serves tool calls in this process while the
worker waits, enforces the timeout on the worker's compute time (time spent
inside tools does not count) and reports files the run left in the workspace.
"""

from __future__ import annotations

import builtins
import logging
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from . import artifacts as _artifacts
from . import execution_result, identity, worker_watch
from .ast_guard import FINAL_ANSWER
from .errors import InvalidToolError, InvalidVariableError, SandboxClosedError
from .execution_result import ExecutionResult
from .process import APP_ROOT, WorkerProcess, minimal_env, shared_mpl_cache, worker_sys_path
from .protocol import ChannelClosed, ProtocolError, encode_json, frame

log = logging.getLogger("agents.executor")
GRACE_S = 1.0  # how long SIGINT may take before the worker is killed...
# ...unless the worker has not had the CPU to act on it: on a loaded machine a worker waiting to be scheduled
# would otherwise be killed (its variables lost) for a stop it would have honoured. It gets more time until it has
# used GRACE_CPU_S of CPU since the interrupt, and never more than GRACE_MAX_S in all (below the UI's 10 s in
# which a stopped run may still confirm in the background, ui/session/stopping.py: past it the agent is
# replaced anyway). A worker that spins instead of stopping uses its CPU quickly and is killed as before.
GRACE_CPU_S = 0.25
GRACE_MAX_S = 8.0
# How long the app polls for the worker's reply before sleeping: short runs (most agent steps) come back
# within this window, and skipping the sleep saves a wake-up (a tiny step took 0.18 ms instead of 0.22-0.26).
# The cost is at most this much CPU per message, yielding to every other runnable thread; and only while no
# other sandbox of this process is running code (on a server with many sessions the CPU is better spent there).
REPLY_SPIN_S = 0.002
CPU_CHECK_S = 1.0  # how often a long run's CPU time is read from the kernel
THREAD_SAMPLE_S = 0.03  # how long threads left after a step are watched for activity
IDLE_CPU_S = 0.25  # CPU a worker may use between two runs (bookkeeping only) before it counts as busy
MAPS_CHECK_S = 1.0  # how often deleted-but-mapped files are looked for (reading /proc/<pid>/maps costs ~1 ms)


class _RunCounter:
    """How many sandboxes of this process are running code right now."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.active = 0

    def __enter__(self) -> _RunCounter:
        with self._lock:
            self.active += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.active -= 1


_running_sandboxes = _RunCounter()


class PythonSandbox:
    """Runs model-written Python in a confined worker process; state persists between runs.

    Artifacts are reported with ``path`` relative to ``workdir`` and ``abs_path``.
    """

    def __init__(self, workdir: str, authorized_imports: Iterable[str] = (), timeout_s: float = 30,
                 memory_limit_mb: int = 1024, max_output_chars: int = 20000,
                 max_file_size_mb: int = 100, max_files_written: int = 200,
                 env: dict[str, str] | None = None, on_log: Callable[[str], None] | None = None,
                 max_result_chars: int = 100_000, max_open_files: int = 256,
                 extra_read_paths: Iterable[str] = (), use_landlock: bool = True, use_seccomp: bool = True,
                 startup_timeout_s: float = 120, nice: int = 5, max_disk_mb: int = 1024,
                 private_root: bool = True, python_layers: bool = True, max_disk_files: int = 20_000) -> None:
        os.makedirs(workdir, exist_ok=True)
        self.workdir = os.path.realpath(workdir)
        self.max_disk_mb = int(max_disk_mb)
        self.max_disk_files = int(max_disk_files)
        self._uid = identity.allocate()  # a user id of its own when the app runs as root
        # App-private: the worker's log and the mount point of its private root (never the worker's to write).
        self._private = tempfile.mkdtemp(prefix="agentdeck-sbx-app-")
        new_root = os.path.join(self._private, "root")
        os.mkdir(new_root, 0o755)
        self.authorized_imports = list(authorized_imports)
        self.timeout_s = timeout_s
        self.on_log = on_log
        self.startup_timeout_s = startup_timeout_s
        self._env = dict(env or {})
        self._tmpdir = tempfile.mkdtemp(prefix="agentdeck-sbx-")
        if self._uid is not None:
            os.chown(self._tmpdir, self._uid, self._uid)
        self._settings: dict[str, Any] = {
            "workdir": self.workdir, "tmpdir": self._tmpdir, "app_root": APP_ROOT,
            "authorized_imports": self.authorized_imports, "memory_limit_mb": int(memory_limit_mb),
            "max_output_chars": int(max_output_chars), "max_result_chars": int(max_result_chars),
            "max_file_size_mb": int(max_file_size_mb), "max_files_written": int(max_files_written),
            "max_open_files": int(max_open_files), "use_landlock": use_landlock, "use_seccomp": use_seccomp,
            # Model-written code runs below the app's priority, so one session's heavy computation (or 16
            # sandboxes importing pandas at once) cannot starve the server that streams every session's steps.
            "nice": max(0, min(19, int(nice))),
            "extra_read_paths": [os.path.realpath(p) for p in extra_read_paths] + [shared_mpl_cache()],
            "uid": self._uid, "new_root": new_root if private_root else None, "sys_path": worker_sys_path(),
            # False only for the attack test suite: no guard, real builtins, no audit hook (a full bypass).
            "python_layers": bool(python_layers),
        }
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
        self._maps_checked_at = 0.0
        self._worker: WorkerProcess | None = None
        self._worker = self._spawn()

    # --- lifecycle ------------------------------------------------------------
    def _spawn(self) -> WorkerProcess:
        init = dict(self._settings, op="init", tools=sorted(self._tools))
        self._adopt_workspace()
        return WorkerProcess(init, minimal_env(self._tmpdir, self._env), self.workdir,
                             os.path.join(self._tmpdir, f".agentdeck-worker-{secrets.token_hex(8)}.log"),
                             start_dir=self._private)

    def _adopt_workspace(self) -> None:
        """Files the app put in the workspace (uploads) become the worker's, so its code can change them."""
        if self._uid is not None:
            identity.give_tree(self.workdir, self._uid)

    def _ready_worker(self) -> WorkerProcess:
        with self._state_lock:
            if self._closed:
                raise SandboxClosedError("the sandbox is closed")
            if self._worker is None or self._worker.dead:
                self._worker = self._spawn()
            worker = self._worker
        first = worker.ready is None
        ready = worker.wait_ready(self.startup_timeout_s)
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

    def _restart(self, empty_tmp: bool = False) -> None:
        with self._state_lock:
            if self._worker is not None:
                self._worker.kill()
            self._worker = None
            if empty_tmp:
                shutil.rmtree(self._tmpdir, ignore_errors=True)
                os.makedirs(self._tmpdir, mode=0o700, exist_ok=True)
                if self._uid is not None:
                    os.chown(self._tmpdir, self._uid, self._uid)
            self._worker = None if self._closed else self._spawn()

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
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.shutdown()
        shutil.rmtree(self._tmpdir, ignore_errors=True)
        shutil.rmtree(self._private, ignore_errors=True)
        identity.release(self._uid)
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
        report = {
            "ast_guard": {"active": True, "detail": "code checked and rewritten before compiling"},
            "import_policy": {"active": True, "detail": "module views; authorized: "
                              + (", ".join(self.authorized_imports) or "safe defaults only")},
            "process": {"active": True, "detail": "separate worker process with a minimal environment"},
        }
        for layer in ready.get("layers", []):
            report[layer["name"]] = {"active": layer["active"], "detail": layer["detail"]}
        return report

    @property
    def active_layers(self) -> list[str]:
        return [name for name, info in self.security_report().items() if info["active"]]

    # --- tools and variables -----------------------------------------------------
    def register_tools(self, tools: dict[str, Callable[..., Any]]) -> None:
        """Make callables available to the code by name; they run in this (the app's) process."""
        for name, fn in tools.items():
            if not (isinstance(name, str) and name.isidentifier()) or name.startswith("_"):
                raise InvalidToolError(f"invalid tool name {name!r}")
            if name == FINAL_ANSWER or hasattr(builtins, name):
                raise InvalidToolError(f"tool name {name!r} clashes with a builtin")
            if not callable(fn):
                raise InvalidToolError(f"tool {name!r} is not callable")
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
                msg = worker.reader.read(timeout=self.startup_timeout_s)
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
            notes: list[str] = []
            if worker.ready is not None:
                # Between runs a worker has nothing to say and nothing to compute: either comes from code
                # the previous step left behind.
                if worker_watch.has_pending(worker.reader.fd):
                    notes.append("the previous step's code kept writing to the sandbox's channel after it ended")
                elif worker.frozen and worker_watch.woke_up(worker.pid, worker.frozen_at):
                    notes.append("the previous step's code woke the sandbox up between steps")
                elif (worker.idle_cpu is not None
                      and worker_watch.cpu_seconds(worker.pid) - worker.idle_cpu > IDLE_CPU_S):
                    notes.append("the previous step's code kept using the CPU after it ended")
                if notes:
                    self._restart()
                    worker = self._ready_worker()
            self._adopt_workspace()
            before = _artifacts.snapshot(self.workdir)
            self._step += 1
            run_id = secrets.token_hex(8)
            self._interrupt = False
            self._running = True
            try:
                with _running_sandboxes:
                    worker.send({"op": "run", "id": run_id, "code": code, "step": self._step,
                                 "timeout_s": self.timeout_s, "stream": on_log is not None})
                    result = self._wait(worker, run_id, on_log, cancel, tools)
            except (OSError, ChannelClosed):
                result = self._crashed(worker, [])
            finally:
                self._running = False
                self._interrupt = False
            if not result.state_lost and (result.threads_left
                                          or worker_watch.thread_left_running(worker, THREAD_SAMPLE_S)):
                self._restart()
                execution_result.lose_state(result, "a thread it started was still running when the step ended, so the "
                                         "sandbox was restarted to stop it")
            if not worker.dead:
                worker.idle_cpu = worker_watch.cpu_seconds(worker.pid)
                worker.freeze()
            for note in notes:
                execution_result.lose_state(result, note + "; the sandbox was restarted")
            after = _artifacts.snapshot(self.workdir)
            result.artifacts = _artifacts.diff(self.workdir, before, after)
            self._check_disk(result, self._worker)
            result.duration_s = time.monotonic() - started
            return result

    def _disk_over(self, worker: WorkerProcess | None) -> str | None:
        pid = worker.pid if worker is not None and not worker.dead else None
        # Deleted files kept alive by a mapping are read from /proc/<pid>/maps (about 1 ms): at most once a second,
        # so back-to-back tiny steps do not pay for it; a file hidden this way is found within the second.
        now = time.monotonic()
        mapped = now - self._maps_checked_at >= MAPS_CHECK_S
        if mapped:
            self._maps_checked_at = now
        return worker_watch.disk_over([self.workdir, self._tmpdir], pid, self.max_disk_mb, self.max_disk_files,
                                      mapped=mapped)

    def _check_disk(self, result: ExecutionResult, worker: WorkerProcess | None) -> None:
        """After a run: over the limits, the temp folder is emptied (with a fresh worker) and the run is told."""
        why = self._disk_over(worker)
        if why is None:
            return
        # The worker's own log is always there; anything else in the temp folder (or a deleted file still open)
        # is emptied with a fresh worker, which gets the new folder only after it exists.
        if worker_watch.usage([self._tmpdir]).files > 1 or (worker and worker_watch.deleted_open_bytes(worker.pid)):
            self._restart(empty_tmp=True)
            execution_result.lose_state(result, "the private temp folder was emptied")
        message = f"DiskLimitError: {why}. Delete files you no longer need."
        result.error = message if result.error is None else f"{result.error}\n{message}"
        result.error_type = result.error_type or "DiskLimitError"

    def _wait(self, worker: WorkerProcess, run_id: str, on_log: Callable[[str], None] | None,
              cancel: threading.Event | None = None,
              tools: Mapping[str, Callable[..., Any]] | None = None) -> ExecutionResult:
        logs: list[str] = []
        logged = overflow = 0
        log_limit = self._settings["max_output_chars"] + execution_result.NOTE_ROOM
        start = time.monotonic()
        tool_time = 0.0
        stopping: str | None = None
        grace_end = stop_cpu = stop_time = 0.0
        cpu_start = worker_watch.cpu_seconds(worker.pid)
        next_disk_check = start + CPU_CHECK_S
        while True:
            now = time.monotonic()
            if stopping is None:
                cancelled = self._interrupt or (cancel is not None and cancel.is_set())
                reason = "interrupt" if cancelled else None
                if reason is None and now - start - tool_time >= self.timeout_s:
                    reason = "timeout"
                if reason is None and now >= next_disk_check:
                    next_disk_check = now + CPU_CHECK_S
                    if self._disk_over(worker) is not None:
                        reason = "disk"
                if reason is None and tool_time and now - start > CPU_CHECK_S:
                    # Time in tools does not count, but a thread burning CPU meanwhile does: the kernel's figure.
                    if worker_watch.cpu_seconds(worker.pid) - cpu_start > self.timeout_s:
                        reason = "timeout"
                if reason:
                    stopping, grace_end = reason, now + GRACE_S
                    stop_cpu, stop_time = worker_watch.cpu_seconds(worker.pid), now
                    worker.interrupt()
            if stopping:
                wait = grace_end - now
                if wait <= 0 and _starved(worker, stop_cpu, now - stop_time):
                    grace_end = now + GRACE_CPU_S
                    wait = GRACE_CPU_S
                if wait <= 0:
                    self._restart()
                    return execution_result.stopped(stopping, logs, True, self.timeout_s, self._disk_over(None))
            else:
                wait = min(self.timeout_s - (now - start - tool_time), CPU_CHECK_S)
            try:
                spin = REPLY_SPIN_S if _running_sandboxes.active == 1 else 0.0
                msg = worker.reader.read(timeout=max(wait, 0.0), wake_fd=self._wake_r, spin_s=spin)
            except (ChannelClosed, ProtocolError):
                return self._crashed(worker, logs)
            if msg is None:
                self._drain_wake()
                continue
            op = msg.get("op")
            if msg.get("id") != run_id or op not in ("log", "tool", "result"):
                return self._misbehaved(worker, logs, "sent a message that belongs to no current run")
            if op == "log":
                text = msg.get("text")
                if not isinstance(text, str):
                    return self._misbehaved(worker, logs, "sent a malformed log message")
                if logged >= log_limit:  # the worker stops sending at the limit; one that does not costs the
                    overflow += len(text)  # app a parse per frame, so it is cut off soon
                    if overflow > 4 * log_limit + 65536:
                        return self._misbehaved(worker, logs, "kept sending output past its limit")
                    continue
                text = text[: log_limit - logged]
                logged += len(text)
                logs.append(text)
                if on_log is not None:
                    try:
                        on_log(text)
                    except Exception:
                        log.exception("on_log callback failed")
            elif op == "tool":
                t0 = time.monotonic()
                reply = self._call_tool(msg, tools)
                tool_time += time.monotonic() - t0
                worker.send(reply)
            else:
                if stopping and msg.get("error_type") == "KeyboardInterrupt":
                    return execution_result.stopped(stopping, logs + [str(msg.get("logs", ""))[:log_limit]], False,
                                              self.timeout_s, self._disk_over(None))
                return execution_result.from_worker(msg, logs, self._settings["max_output_chars"],
                                              self._settings["max_result_chars"])

    def _misbehaved(self, worker: WorkerProcess, logs: list[str], what: str) -> ExecutionResult:
        """The worker broke the protocol: restart it; the run's output is not to be trusted."""
        worker.kill()
        self._restart()
        return execution_result.protocol_error(logs, what)

    def _drain_wake(self) -> None:
        try:
            os.read(self._wake_r, 1024)
        except OSError:
            pass

    def _call_tool(self, msg: dict[str, Any],
                   tools: Mapping[str, Callable[..., Any]] | None = None) -> dict[str, Any]:
        name, call_id = msg.get("name"), msg.get("call_id")
        fn = None
        if isinstance(name, str) and name in self._tools:
            fn = self._tools[name] if tools is None else tools.get(name)
        args, kwargs = msg.get("args") or [], msg.get("kwargs") or {}
        if fn is None or not isinstance(args, list) or not isinstance(kwargs, dict):
            return {"op": "tool_result", "call_id": call_id, "ok": False, "error": f"unknown tool {name!r}"}
        try:
            value = fn(*args, **kwargs)
        except Exception as exc:
            return {"op": "tool_result", "call_id": call_id, "ok": False, "error": f"{type(exc).__name__}: {exc}"}
        reply = {"op": "tool_result", "call_id": call_id, "ok": True, "value": value}
        try:
            frame(reply)
        except (TypeError, ValueError):
            reply["value"] = str(value)
        return reply

    def _crashed(self, worker: WorkerProcess, logs: list[str]) -> ExecutionResult:
        try:
            worker.proc.wait(timeout=1)
        except Exception:
            pass
        how = worker.exit_description()
        worker.kill()
        self._restart()
        return execution_result.crashed(logs, how, self._settings["memory_limit_mb"])


def _starved(worker: WorkerProcess, cpu_at_stop: float, since_stop_s: float) -> bool:
    """Whether an interrupted worker has not yet had the CPU to honour the interrupt (see GRACE_CPU_S)."""
    if since_stop_s >= GRACE_MAX_S or worker.dead:
        return False
    return worker_watch.cpu_seconds(worker.pid) - cpu_at_stop < GRACE_CPU_S
