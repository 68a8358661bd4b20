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
from dataclasses import dataclass, field
from typing import Any, Callable

from . import artifacts as _artifacts
from . import identity, worker_watch
from .artifacts import Artifact
from .ast_guard import FINAL_ANSWER
from .errors import InvalidToolError, InvalidVariableError, SandboxClosedError
from .process import APP_ROOT, WorkerProcess, minimal_env, shared_mpl_cache, worker_sys_path
from .protocol import ChannelClosed, ProtocolError, encode_json, frame

log = logging.getLogger("agents.executor")
GRACE_S = 1.0  # how long SIGINT may take before the worker is killed
# How long the app polls for the worker's reply before sleeping: short runs (most agent steps) come back
# within this window, and skipping the sleep saves a wake-up (a tiny step took 0.18 ms instead of 0.22-0.26).
# The cost is at most this much CPU per message, yielding to every other runnable thread; and only while no
# other sandbox of this process is running code (on a server with many sessions the CPU is better spent there).
REPLY_SPIN_S = 0.002
CPU_CHECK_S = 1.0  # how often a long run's CPU time is read from the kernel
THREAD_SAMPLE_S = 0.03  # how long threads left after a step are watched for activity
IDLE_CPU_S = 0.25  # CPU a worker may use between two runs (bookkeeping only) before it counts as busy


def _short_name(value: Any) -> str | None:
    """A type or error name from the worker, kept short and printable."""
    if value is None:
        return None
    text = "".join(ch for ch in str(value)[:100] if ch.isalnum() or ch in "._")
    return text or None


class _RunCounter:
    """How many sandboxes of this process are running code right now."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.active = 0

    def __enter__(self) -> "_RunCounter":
        with self._lock:
            self.active += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.active -= 1


_running_sandboxes = _RunCounter()


@dataclass
class RunResult:
    """Outcome of one run. ``output`` is plain JSON-able data, or the repr of other objects."""

    logs: str = ""
    output: Any = None
    is_final_answer: bool = False
    error: str | None = None
    artifacts: list[Artifact] = field(default_factory=list)
    error_type: str | None = None
    output_type: str = "NoneType"
    state_lost: bool = False
    duration_s: float = 0.0
    untrusted: bool = False  # the worker broke the protocol during this run; its output may be forged
    threads_left: int = 0  # Python threads of the code still alive after the step (the worker's report)

    @property
    def ok(self) -> bool:
        return self.error is None


class PythonSandbox:
    """Runs model-written Python in a confined worker process; state persists between runs.

    Artifacts are reported with ``path`` relative to ``workdir`` and ``abs_path``.
    """

    def __init__(self, workdir: str, authorized_imports=(), timeout_s: float = 30,
                 memory_limit_mb: int = 1024, max_output_chars: int = 20000,
                 max_file_size_mb: int = 100, max_files_written: int = 200,
                 env: dict[str, str] | None = None, on_log: Callable[[str], None] | None = None,
                 max_result_chars: int = 100_000, max_open_files: int = 256,
                 extra_read_paths=(), use_landlock: bool = True, use_seccomp: bool = True,
                 startup_timeout_s: float = 120, nice: int = 5, max_disk_mb: int = 1024,
                 private_root: bool = True, python_layers: bool = True):
        os.makedirs(workdir, exist_ok=True)
        self.workdir = os.path.realpath(workdir)
        self.max_disk_mb = int(max_disk_mb)
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
        self._settings = {
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
        self._tools: dict[str, Callable] = {}
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
        self._worker: WorkerProcess | None = None
        self._worker = self._spawn()

    # --- lifecycle ------------------------------------------------------------
    def _spawn(self) -> WorkerProcess:
        init = dict(self._settings, op="init", tools=sorted(self._tools))
        self._adopt_workspace()
        return WorkerProcess(init, minimal_env(self._tmpdir, self._env), self.workdir,
                             os.path.join(self._private, "worker.log"))

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
        ready = worker.wait_ready(self.startup_timeout_s)
        if not self._warned:
            self._warned = True
            for warning in ready.get("warnings", []):
                log.warning("sandbox: %s", warning)
            for layer in ready.get("layers", []):
                if not layer["active"]:
                    log.warning("sandbox isolation layer '%s' is NOT active: %s", layer["name"], layer["detail"])
        return worker

    def _restart(self) -> None:
        with self._state_lock:
            if self._worker is not None:
                self._worker.kill()
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

    def __enter__(self) -> "PythonSandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    # --- security report -------------------------------------------------------
    def security_report(self) -> dict[str, dict]:
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
    def register_tools(self, tools: dict[str, Callable]) -> None:
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
            worker.send({"op": "tools", "names": sorted(self._tools)})

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
            worker.send({"op": "vars", "values": variables})
            while True:
                msg = worker.reader.read(timeout=self.startup_timeout_s)
                if msg is None or msg.get("op") == "vars_done":
                    break
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
            cancel: threading.Event | None = None) -> RunResult:
        """Run ``code`` in the sandbox; never raises for problems of the code itself.

        ``cancel`` is the caller's stop flag: when it is set (even before the worker is up, or before this
        call started), the code is interrupted as by ``interrupt()``. ``interrupt()`` alone only acts on a
        run already in progress, so callers that can be stopped at any moment should pass ``cancel``.
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
                elif worker.idle_cpu is not None and worker_watch.cpu_seconds(worker.pid) - worker.idle_cpu > IDLE_CPU_S:
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
                    result = self._wait(worker, run_id, on_log, cancel)
            except (OSError, ChannelClosed):
                result = self._crashed(worker, [])
            finally:
                self._running = False
                self._interrupt = False
            if not result.state_lost and (result.threads_left or self._threads_busy(worker)):
                self._restart()
                self._lose_state(result, "a thread it started was still running when the step ended, so the "
                                         "sandbox was restarted to stop it")
            if not worker.dead:
                worker.idle_cpu = worker_watch.cpu_seconds(worker.pid)
            for note in notes:
                self._lose_state(result, note + "; the sandbox was restarted")
            after = _artifacts.snapshot(self.workdir)
            result.artifacts = _artifacts.diff(self.workdir, before, after)
            self._check_disk(result, after)
            result.duration_s = time.monotonic() - started
            return result

    @staticmethod
    def _threads_busy(worker: WorkerProcess) -> bool:
        """Whether a thread besides the main one still runs, as the kernel sees it (pool threads park)."""
        if worker.dead or worker_watch.task_count(worker.pid) <= 1:
            return False
        deadline = time.monotonic() + THREAD_SAMPLE_S
        while True:  # a thread that is just ending gets a moment
            unparked = worker_watch.unparked_threads(worker.pid)
            if unparked is None:
                return worker_watch.busy_threads(worker.pid, THREAD_SAMPLE_S) > 0
            if unparked == 0:
                return False
            if time.monotonic() > deadline:
                return True
            time.sleep(0.002)

    @staticmethod
    def _lose_state(result: RunResult, why: str) -> None:
        result.state_lost = True
        result.logs += (f"\n[sandbox] {why}: all variables, imports and functions from earlier steps are "
                        "gone; define what you need again.\n")

    def _check_disk(self, result: RunResult, after: _artifacts.Snapshot) -> None:
        """The workspace and the private temp folder together stay under ``max_disk_mb``."""
        tmp_files, tmp_bytes = worker_watch.usage(self._tmpdir)
        used = sum(size for size, _mtime in after.values()) + tmp_bytes
        if used <= self.max_disk_mb * 1024 * 1024:
            return
        if tmp_bytes:
            self._restart()
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            os.makedirs(self._tmpdir, mode=0o700, exist_ok=True)
            if self._uid is not None:
                os.chown(self._tmpdir, self._uid, self._uid)
            self._lose_state(result, f"the private temp folder ({tmp_files} files) was emptied")
        message = (f"DiskLimitError: the sandbox's files take {used // (1024 * 1024)} MB, over the limit of "
                   f"{self.max_disk_mb} MB (max_disk_mb; the app can raise it). Delete files you no longer need.")
        result.error = message if result.error is None else f"{result.error}\n{message}"
        result.error_type = result.error_type or "DiskLimitError"

    def _wait(self, worker: WorkerProcess, run_id: str, on_log,
              cancel: threading.Event | None = None) -> RunResult:
        logs: list[str] = []
        logged = 0
        log_limit = self._settings["max_output_chars"] + 500
        start = time.monotonic()
        tool_time = 0.0
        stopping: str | None = None
        grace_end = 0.0
        cpu_start = worker_watch.cpu_seconds(worker.pid)
        while True:
            now = time.monotonic()
            if stopping is None:
                cancelled = self._interrupt or (cancel is not None and cancel.is_set())
                reason = "interrupt" if cancelled else None
                if reason is None and now - start - tool_time >= self.timeout_s:
                    reason = "timeout"
                if reason is None and tool_time and now - start > CPU_CHECK_S:
                    # Time in tools does not count, but a thread burning CPU meanwhile does: the kernel's figure.
                    if worker_watch.cpu_seconds(worker.pid) - cpu_start > self.timeout_s:
                        reason = "timeout"
                if reason:
                    stopping, grace_end = reason, now + GRACE_S
                    worker.interrupt()
            if stopping:
                wait = grace_end - now
                if wait <= 0:
                    self._restart()
                    return self._stopped(stopping, logs, lost=True)
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
                if logged >= log_limit:
                    continue  # beyond the limit the worker should have stopped sending; drop, do not store
                text = text[: log_limit - logged]
                logged += len(text)
                logs.append(text)
                if on_log is not None:
                    try:
                        on_log(text)
                    except Exception:  # noqa: BLE001 - a UI callback must not break the run
                        log.exception("on_log callback failed")
            elif op == "tool":
                t0 = time.monotonic()
                reply = self._call_tool(msg)
                tool_time += time.monotonic() - t0
                worker.send(reply)
            else:
                if stopping and msg.get("error_type") == "KeyboardInterrupt":
                    return self._stopped(stopping, logs + [str(msg.get("logs", ""))[:log_limit]], lost=False)
                return self._result(msg, logs)

    def _misbehaved(self, worker: WorkerProcess, logs: list[str], what: str) -> RunResult:
        """The worker broke the protocol: its state and this run's output cannot be trusted."""
        worker.kill()
        self._restart()
        return RunResult(logs="".join(logs), error_type="SandboxProtocolError", state_lost=True, untrusted=True,
                         error=(f"SandboxProtocolError: the sandbox worker {what}. The code may have tampered "
                                "with the sandbox, so its output was discarded and a fresh sandbox was started: "
                                "all variables, imports and functions from earlier steps are gone."))

    def _drain_wake(self) -> None:
        try:
            os.read(self._wake_r, 1024)
        except OSError:
            pass

    def _call_tool(self, msg: dict) -> dict:
        name, call_id = msg.get("name"), msg.get("call_id")
        fn = self._tools.get(name) if isinstance(name, str) else None
        args, kwargs = msg.get("args") or [], msg.get("kwargs") or {}
        if fn is None or not isinstance(args, list) or not isinstance(kwargs, dict):
            return {"op": "tool_result", "call_id": call_id, "ok": False, "error": f"unknown tool {name!r}"}
        try:
            value = fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - becomes ToolCallError inside the sandbox
            return {"op": "tool_result", "call_id": call_id, "ok": False, "error": f"{type(exc).__name__}: {exc}"}
        reply = {"op": "tool_result", "call_id": call_id, "ok": True, "value": value}
        try:
            frame(reply)
        except (TypeError, ValueError):
            reply["value"] = str(value)
        return reply

    def _result(self, msg: dict, logs: list[str]) -> RunResult:
        """The worker's result, with every limit enforced again here: the worker may be lying."""
        limit = self._settings["max_output_chars"] + 500  # room for the worker's own truncation note
        text = "".join(logs) + str(msg.get("logs") or "")[:limit + 1]
        if len(text) > limit:
            text = text[:limit] + f"\n[output truncated at max_output_chars={limit - 500}]\n"
        error = msg.get("error")
        return RunResult(logs=text, output=self._bounded_output(msg.get("output")),
                         is_final_answer=msg.get("is_final") is True,
                         error=str(error)[:limit] if error is not None else None,
                         error_type=_short_name(msg.get("error_type")),
                         output_type=_short_name(msg.get("output_type")) or "NoneType",
                         threads_left=1 if msg.get("threads_left") else 0)

    def _bounded_output(self, value: Any) -> Any:
        limit = self._settings["max_result_chars"]
        if isinstance(value, str):
            return value if len(value) <= limit else value[:limit] + f"\n[truncated {len(value) - limit} characters]"
        if isinstance(value, (list, dict)):
            encoded = encode_json(value)
            if len(encoded) > limit:
                return encoded[:limit] + f"\n[truncated {len(encoded) - limit} characters]"
        return value

    def _stopped(self, reason: str, logs: list[str], lost: bool) -> RunResult:
        if reason == "timeout":
            what = (f"TimeoutError: the code ran longer than the limit of {self.timeout_s} s "
                    f"(timeout_s={self.timeout_s}; the app can raise it) and was stopped.")
        else:
            what = "InterruptedError: the run was interrupted."
        if lost:
            what += (" It did not stop in time, so the worker was restarted: all variables, imports and "
                     "functions from earlier steps were lost.")
        else:
            what += " Variables from earlier steps are kept."
        return RunResult(logs="".join(logs), error=what,
                         error_type="TimeoutError" if reason == "timeout" else "InterruptedError",
                         state_lost=lost)

    def _crashed(self, worker: WorkerProcess, logs: list[str]) -> RunResult:
        try:
            worker.proc.wait(timeout=1)
        except Exception:  # noqa: BLE001 - still running: it broke the protocol
            pass
        how = worker.exit_description()
        worker.kill()
        self._restart()
        return RunResult(logs="".join(logs), error_type="WorkerCrashed", state_lost=True,
                         error=(f"WorkerCrashed: the sandbox worker stopped unexpectedly ({how}). "
                                f"A fresh worker was started; all state from earlier steps was lost. "
                                f"If the code used a lot of memory, the limit is memory_limit_mb="
                                f"{self._settings['memory_limit_mb']}."))
