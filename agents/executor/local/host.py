"""The local backend: the sandbox's worker is a confined process on the app's own machine.

Every local assumption lives here and in this folder: a worker the app spawns (`process.py`), stopped with
SIGSTOP between steps, read through `/proc` (`worker_watch.py`), its disk counted by walking folders of the same
disk (`disk_limit.py`), a user id of its own handed the workspace (`..identity`), a private temp folder.
"""

from __future__ import annotations

import os
import secrets
import tempfile
import threading
import weakref
from typing import Any

from .. import identity
from ..artifacts import Snapshot
from ..backend import (
    SEND_DEADLINE_S,
    Capabilities,
    SandboxBackend,
    SandboxHost,
    SandboxSpec,
    attach_mismatch,
)
from ..errors import SandboxError, SandboxStartError
from ..execution_result import ExecutionResult
from ..protocol import ChannelClosed
from ..worker_init import init_command
from . import worker_watch
from .disk_limit import DiskLimit
from .process import WorkerProcess, minimal_env, shared_mpl_cache, worker_sys_path
from .shared_disk import SharedDiskFiles

CAPABILITIES = Capabilities(suspend=True, thread_check=True, cpu_time=True, disk_usage=True, same_disk=True,
                            attach=True, warm_start=True)
_live: weakref.WeakValueDictionary[str, LocalHost] = weakref.WeakValueDictionary()
_live_lock = threading.Lock()


class LocalHost(SharedDiskFiles):
    """One local worker and what it owns: its temp folder, its app-private folder, its user id."""

    capabilities = CAPABILITIES

    def __init__(self, spec: SandboxSpec) -> None:
        if spec.limits.startup_timeout_s <= 0:
            raise SandboxStartError("startup_timeout_s must be positive")
        self.id = secrets.token_hex(12)
        self.spec = spec
        self.workdir = ""
        self._closed = False
        self._uid = identity.allocate()  # a user id of its own when the app runs as root
        # App-private: the worker's log and the mount point of its private root (never the worker's to write).
        self._private = tempfile.mkdtemp(prefix="agentdeck-sbx-app-")
        self.tmpdir = tempfile.mkdtemp(prefix="agentdeck-sbx-")
        self._disk: DiskLimit | None = None
        try:
            self._new_root = os.path.join(self._private, "root")
            os.mkdir(self._new_root, 0o755)
            if self._uid is not None:
                os.chown(self.tmpdir, self._uid, self._uid)
            # Warm or not, the worker starts by loading its libraries; the settings that name the session follow
            # in the init frame (at once, or when the pool hands the host to a session: `assign`).
            preload = {"op": "preload", "authorized_imports": list(spec.authorized_imports),
                       # Model-written code runs below the app's priority, so one session's heavy computation (or
                       # 16 sandboxes importing pandas at once) cannot starve the server that streams every step.
                       "nice": max(0, min(19, int(spec.limits.nice))), "sys_path": worker_sys_path()}
            self.process = WorkerProcess(preload, minimal_env(self.tmpdir, dict(spec.env)), self._private,
                                         os.path.join(self.tmpdir, f".agentdeck-worker-{secrets.token_hex(8)}.log"),
                                         start_dir=self._private)
            self._assigned = False
            if spec.workspace is not None:
                self.assign(spec)
        except BaseException:
            self._release()
            raise
        with _live_lock:
            _live[self.id] = self

    def assign(self, spec: SandboxSpec) -> None:
        if self._assigned or self.process.dead or spec.workspace is None:
            raise SandboxStartError("this sandbox cannot be assigned a workspace (already assigned, or gone)")
        self._assigned = True
        self.spec = spec
        os.makedirs(spec.workspace.path, exist_ok=True)
        self.workdir = os.path.realpath(spec.workspace.path)
        limits = spec.limits
        extra_read = [os.path.realpath(p) for p in spec.workspace.extra_read_paths] + [shared_mpl_cache()]
        init = init_command(spec, self.workdir, self.tmpdir, extra_read_paths=extra_read, uid=self._uid,
                            new_root=self._new_root if spec.private_root else None)
        self._disk = DiskLimit(self.workdir, self.tmpdir, int(limits.max_disk_mb), int(limits.max_disk_files),
                               int(limits.min_free_mb))
        self.push_workspace()
        try:
            self.process.send(init)
        except (ChannelClosed, OSError) as exc:  # a worker that died while it waited: a broken pipe
            self.process.kill()
            raise SandboxStartError(f"the sandbox worker did not take its settings: {exc}. "
                                    f"{self.process.log_tail()}") from exc

    # --- facts -------------------------------------------------------------------------------------------------
    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def ready(self) -> dict[str, Any] | None:
        return self.process.ready

    @property
    def dead(self) -> bool:
        return self.process.dead

    # --- the channel -----------------------------------------------------------------------------------------
    def wait_ready(self, timeout: float) -> dict[str, Any]:
        return self.process.wait_ready(timeout)

    def send(self, msg: dict[str, Any], deadline_s: float = SEND_DEADLINE_S) -> None:
        self.process.send(msg, deadline_s)

    def read(self, timeout: float | None = None, wake_fd: int | None = None,
             spin_s: float = 0.0) -> dict[str, Any] | None:
        return self.process.reader.read(timeout=timeout, wake_fd=wake_fd, spin_s=spin_s)

    def has_pending(self) -> bool:
        return worker_watch.has_pending(self.process.reader.fd)

    # --- the watch -----------------------------------------------------------------------------------------
    def freeze(self) -> None:
        self.process.freeze()

    def thaw(self) -> None:
        self.process.thaw()

    def woke_up(self) -> bool:
        process = self.process
        return process.frozen and not process.dead and worker_watch.woke_up(process.pid, process.frozen_at,
                                                                             stat=process.proc_stat)

    def cpu_seconds(self) -> float:
        return worker_watch.cpu_seconds(self.process.pid, self.process.proc_stat)

    def thread_left_running(self, sample_s: float) -> bool:
        return worker_watch.thread_left_running(self.process, sample_s)

    def end_of_run(self, sample_s: float) -> tuple[bool, float]:
        return worker_watch.end_of_run(self.process, sample_s)

    def disk_over(self) -> str | None:
        if self._disk is None:
            return None
        return self._disk.over(None if self.process.dead else self.process)

    def check_disk_after_run(self, result: ExecutionResult, workspace: Snapshot | None = None) -> bool:
        if self._disk is None:
            return False
        emptied: list[bool] = []
        self._disk.check_after_run(result, None if self.process.dead else self.process, lambda: emptied.append(True),
                                   workspace)
        return bool(emptied)

    def set_min_free_mb(self, value: int) -> None:
        if self._disk is not None:
            self._disk.min_free_mb = int(value)

    def interrupt(self) -> None:
        self.process.interrupt()

    def exit_description(self, wait_s: float = 1.0) -> str:
        try:
            self.process.proc.wait(timeout=wait_s)
        except Exception:
            pass
        return self.process.exit_description()

    def kill(self) -> None:
        self.process.kill()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.process.shutdown()
        self._release()

    def _release(self) -> None:
        self._release_host_side(_live, _live_lock)

    def memory_bytes(self) -> int | None:
        """The worker's proportional set size (shared library pages split among the processes that map them)."""
        return worker_watch.pss_bytes(self.process.pid)

    def security_report(self) -> dict[str, dict[str, Any]]:
        limits = self.spec.limits
        return {
            "process": {"active": True, "detail": "separate worker process with a minimal environment, on the "
                        "app's machine (local backend)"},
            "freeze_between_steps": {"active": True, "detail": "the worker is stopped (SIGSTOP) whenever the app is "
                                     "not waiting for it; found running, it is replaced"},
            "thread_check": {"active": True, "detail": "after each step the worker's threads are read from "
                             "/proc/<pid>/task; one not parked in futex restarts it"},
            "cpu_time": {"active": True, "detail": "the worker's CPU time is read from /proc while tools run and "
                         "between steps"},
            "disk_limit": {"active": True, "detail": f"workspace and temp folder held to {limits.max_disk_mb} MB and "
                           f"{limits.max_disk_files:,} files by the app, deleted-but-open files included"},
        }


class LocalBackend:
    """Sandboxes as confined worker processes of this machine (the default backend)."""

    name = "local"
    capabilities = CAPABILITIES

    def unavailable_reason(self) -> str | None:
        if not hasattr(os, "fork") or not os.path.isdir("/proc"):
            return "the local sandbox needs Linux (/proc, fork)"
        return None

    def start(self, spec: SandboxSpec) -> LocalHost:
        return LocalHost(spec)

    def attach(self, host_id: str, expect: SandboxSpec | None = None) -> LocalHost:
        with _live_lock:
            host = _live.get(host_id)
        if host is None or host.dead:
            raise SandboxError(f"no live local sandbox {host_id[:80]!r} in this process")
        why = attach_mismatch(host.spec, expect) if expect is not None else None
        if why is not None:
            raise SandboxError(f"the local sandbox {host_id[:80]!r} cannot be attached: {why}")
        return host


def _conforms(host: LocalHost, backend: LocalBackend) -> tuple[SandboxHost, SandboxBackend]:
    """Checked by mypy: the local classes implement the protocol (no runtime cost)."""
    return host, backend
