"""PythonSandbox: the app-side handle on one sandboxed worker.

The app calls ``run(code)``; the sandbox sends it to the worker (which checks it: layer 1), watches the run
(run_watch.py: tool calls served in this process by tool_calls.py, the timeout on the worker's compute time,
interrupts), checks that nothing of the step outlived it, and reports files the run left in the workspace
and whether the disk limit holds (disk_limit.py). It owns the worker's life: start, restart, close.
"""

from __future__ import annotations

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
from .disk_limit import DiskLimit
from .errors import InvalidVariableError, SandboxClosedError
from .execution_result import ExecutionResult
from .process import APP_ROOT, WorkerProcess, minimal_env, shared_mpl_cache, worker_sys_path
from .protocol import ChannelClosed, ProtocolError, encode_json
from .run_watch import RunWatch
from .tool_calls import check_tool_names, serve_tool_call
from .tree_walk import remove_tree

log = logging.getLogger("agents.executor")
THREAD_SAMPLE_S = 0.03  # how long threads left after a step are watched for activity
GIVE_TREE_ENTRIES = 50_000  # entries of the workspace handed to the sandbox's user at most (or twice max_disk_files)
IDLE_CPU_S = 0.25  # CPU a worker may use between two runs (bookkeeping only) before it counts as busy


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
                 private_root: bool = True, python_layers: bool = True, max_disk_files: int = 20_000,
                 min_free_mb: int = 0) -> None:
        os.makedirs(workdir, exist_ok=True)
        self.workdir = os.path.realpath(workdir)
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
        self._disk = DiskLimit(self.workdir, self._tmpdir, int(max_disk_mb), int(max_disk_files), int(min_free_mb))
        self._worker: WorkerProcess | None = None
        self._worker = self._spawn()

    @property
    def max_disk_mb(self) -> int:
        return self._disk.max_mb

    @property
    def max_disk_files(self) -> int:
        return self._disk.max_files

    @property
    def min_free_mb(self) -> int:
        """The shared disk's floor: below that much free space, code that writes is stopped (0: no floor)."""
        return self._disk.min_free_mb

    @min_free_mb.setter
    def min_free_mb(self, value: int) -> None:
        self._disk.min_free_mb = int(value)

    # --- lifecycle ------------------------------------------------------------
    def _spawn(self) -> WorkerProcess:
        init = dict(self._settings, op="init", tools=sorted(self._tools))
        self._adopt_workspace()
        return WorkerProcess(init, minimal_env(self._tmpdir, self._env), self.workdir,
                             os.path.join(self._tmpdir, f".agentdeck-worker-{secrets.token_hex(8)}.log"),
                             start_dir=self._private)

    def _adopt_workspace(self) -> str | None:
        """Files the app put in the workspace (uploads) become the worker's, so its code can change them.
        Returns why some could not (a tree past the entry cap, say), for the run's output."""
        if self._uid is None:
            return None
        return identity.give_tree(self.workdir, self._uid, max_entries=max(GIVE_TREE_ENTRIES, 2 * self.max_disk_files))

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
                remove_tree(str(self._tmpdir))
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
        remove_tree(str(self._tmpdir))
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
            not_given = self._adopt_workspace()
            before = _artifacts.snapshot(self.workdir)
            self._step += 1
            run_id = secrets.token_hex(8)
            self._interrupt = False
            self._running = True
            try:
                request = {"op": "run", "id": run_id, "code": code, "step": self._step,
                           "timeout_s": self.timeout_s, "stream": on_log is not None}
                # Built per run: a watch kept on the sandbox would hold it in a reference cycle (no prompt close()).
                watch = RunWatch(worker, self._wake_r, lambda: self._interrupt, self._restart, self._disk.over,
                                 self._settings["max_output_chars"], self._settings["max_result_chars"],
                                 self._settings["memory_limit_mb"])
                result = watch.run(request, self.timeout_s, on_log, cancel,
                                   lambda msg: serve_tool_call(msg, self._tools, tools))
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
            for why in ([not_given] if not_given else []) + after.notes():
                result.logs += f"\n[sandbox] {why}."
            self._disk.check_after_run(result, self._worker, lambda: self._restart(empty_tmp=True))
            result.duration_s = time.monotonic() - started
            return result
