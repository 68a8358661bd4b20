"""The Docker backend: each sandbox's worker runs in a container of its own on a Docker Engine of this machine.

What the container adds to the worker's own layers (which run inside it unchanged): its own PID, mount, IPC, UTS
and network namespaces (no network at all), a read-only root holding only the image's files, a user id of its own,
no capabilities, no new privileges, and cgroup limits on tasks, memory (page cache counted, no swap) and CPU.
The app keeps everything else it does for a local worker: the channel is a unix socket, the worker is stopped
between steps with SIGSTOP and read through ``/proc/<pid>`` on the same host, and the workspace and the private
temp folder are the app's own folders, bind-mounted at their paths and counted against the disk limit.
A pooled container (a warm start, `pool.py`) is made before its session: its workspace is bound onto its slot
(`slot.py`) at `assign`, before the worker gets its settings and confines itself.

Docker's seccomp profile is not applied (``seccomp=unconfined``), deliberately: it refuses the ``unshare`` the
worker's private view needs, and the worker installs its own filter, stricter than Docker's for everything the
code can do, on every thread before any code runs (layer 4f). Docker's AppArmor profile is left as the engine
sets it (none on this machine's engine).
"""

from __future__ import annotations

import os
import secrets
import socket
import tempfile
import threading
import weakref
from typing import TYPE_CHECKING, Any, Protocol, cast

from .. import identity
from ..artifacts import Snapshot
from ..backend import (
    SEND_DEADLINE_S,
    Capabilities,
    SandboxSpec,
)
from ..errors import SandboxError, SandboxStartError
from ..execution_result import ExecutionResult
from ..local import worker_watch
from ..local.disk_limit import DiskLimit
from ..local.process import minimal_env
from ..local.shared_disk import SharedDiskFiles
from ..protocol import ChannelClosed
from ..worker_init import init_command
from . import daemon, image, slot
from .container import BOOT, LABEL, ContainerWorker
from .slot import WorkspaceSlot

if TYPE_CHECKING:
    from ..local.process import WorkerProcess

CAPABILITIES = Capabilities(suspend=True, thread_check=True, cpu_time=True, disk_usage=True, same_disk=True,
                            attach=True, warm_start=slot.supported())
#: Memory the container may use beyond ``memory_limit_mb``: the interpreter and the preloaded libraries (about
#: 200-400 MB with numpy, pandas and matplotlib) are outside the worker's own address-space budget.
BASELINE_MB = 512
MAX_TASKS = 80  # the worker's own RLIMIT_NPROC is 64 threads; the cgroup bounds the container as a whole
APP_LABEL = "agentdeck.app"
NO_EXTRA_READ = ("the Docker sandbox cannot read folders of the app's machine (extra_read_paths); put the files "
                 "in the workspace instead")
live_hosts: weakref.WeakValueDictionary[str, DockerHost] = weakref.WeakValueDictionary()
live_lock = threading.Lock()
unremoved: set[str] = set()  # containers closed while the engine did not answer


def boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip()
    except OSError:
        return "unknown"


APP_ID = f"{boot_id()}:{os.getpid()}"


class EngineSource(Protocol):
    """What a host needs of its backend (`backend.DockerBackend`): the engine's client and the image's tag."""

    def client_and_image(self) -> tuple[Any, str]: ...


def cpus() -> float:
    """CPUs per sandbox container: ``configure_host(docker_cpus=...)`` (the app's ``AGENTDECK_DOCKER_CPUS``)."""
    from agents.host_settings import host_settings

    return max(0.1, host_settings().docker_cpus)


def cgroup_memory_bytes(pid: int) -> int | None:
    """Memory use of the cgroup holding ``pid`` (cgroup v1 ``memory.usage_in_bytes`` or v2 ``memory.current``)."""
    try:
        with open(f"/proc/{pid}/cgroup") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            candidates = [f"/sys/fs/cgroup/memory{path}/memory.usage_in_bytes"]
        elif controllers == "":
            candidates = [f"/sys/fs/cgroup{path}/memory.current"]
        else:
            continue
        for candidate in candidates:
            try:
                with open(candidate) as fh:
                    return int(fh.read().strip())
            except (OSError, ValueError):
                continue
    return None


def _as_process(worker: ContainerWorker) -> WorkerProcess:
    """The local watch helpers read only ``pid`` and ``dead``, which a container worker has (its host pid)."""
    return cast("WorkerProcess", worker)


class DockerHost(SharedDiskFiles):
    """One sandbox container: its worker, its channel, its temp folder, its user id."""

    capabilities = CAPABILITIES

    def __init__(self, backend: EngineSource, spec: SandboxSpec) -> None:
        workspace = spec.workspace  # None: a warm start (pool.py), the workspace comes with `assign`, into the slot
        warm = workspace is None
        if workspace is not None and workspace.extra_read_paths:
            raise SandboxStartError(NO_EXTRA_READ)
        if spec.limits.startup_timeout_s <= 0:
            raise SandboxStartError("startup_timeout_s must be positive")
        client, tag = backend.client_and_image()
        self.id = secrets.token_hex(12)
        self.spec = spec
        self.workdir = ""
        self._closed = False
        self._slot: WorkspaceSlot | None = None
        self._disk: DiskLimit | None = None
        self._uid = identity.allocate()
        self._private = tempfile.mkdtemp(prefix="agentdeck-sbx-app-")
        self.tmpdir = tempfile.mkdtemp(prefix="agentdeck-sbx-")
        self.process: ContainerWorker | None = None
        listener: socket.socket | None = None
        container: Any = None
        try:
            user = (self._uid, self._uid) if self._uid is not None else (os.getuid(), os.getgid())
            for folder in (self.tmpdir, self._private):
                os.chown(folder, *user)  # the private folder: the socket, reachable by the sandbox's id only
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock_path = os.path.join(self._private, "channel.sock")
            listener.bind(sock_path)
            os.chown(sock_path, *user)
            listener.listen(1)
            limits = spec.limits
            nice = max(0, min(19, int(limits.nice)))
            mounts = {path: {"bind": path, "mode": "rw"} for path in (self.tmpdir, self._private)}
            first: dict[str, Any]
            if workspace is None:
                # The libraries are loaded now; the session's settings and the confinement follow at `assign`.
                self._slot = WorkspaceSlot()
                mounts[self._slot.path] = {"bind": self._slot.path, "mode": "rw,rslave"}
                first = {"op": "preload", "authorized_imports": list(spec.authorized_imports), "nice": nice,
                         "sys_path": image.site_packages_paths()}
            else:
                os.makedirs(workspace.path, exist_ok=True)
                self.workdir = os.path.realpath(workspace.path)
                mounts[self.workdir] = {"bind": self.workdir, "mode": "rw"}
                first = self._init_command(spec, self.workdir)
                self._disk = DiskLimit(self.workdir, self.tmpdir, int(limits.max_disk_mb),
                                       int(limits.max_disk_files), int(limits.min_free_mb))
                self.push_workspace()
            env = minimal_env(self.tmpdir, dict(spec.env))
            env["MPLCONFIGDIR"] = os.path.join(self._private, "mplcache")  # not counted as the code's files
            log_path = os.path.join(self.tmpdir, f".agentdeck-worker-{secrets.token_hex(8)}.log")
            memory = f"{int(limits.memory_limit_mb) + BASELINE_MB}m"
            try:
                container = client.containers.create(
                    tag, ["/usr/local/bin/python3", "-I", "-S", "-B", "-c", BOOT, image.WORKER_DIR, sock_path,
                          log_path, image.MPL_CACHE],
                    user=f"{user[0]}:{user[1]}", network_mode="none", read_only=True, cap_drop=["ALL"],
                    security_opt=["no-new-privileges", "seccomp=unconfined"], pids_limit=MAX_TASKS,
                    mem_limit=memory, memswap_limit=memory, nano_cpus=int(cpus() * 1e9), environment=env,
                    working_dir="/opt/agentdeck", volumes=mounts, ipc_mode="private", log_config={"type": "none"},
                    # Docker's init as the container's pid 1, so the worker is not: "signals only to itself" then
                    # also refuses the container's pid 1, and a worker's end ends the container.
                    init=True,
                    labels={LABEL: "1", APP_LABEL: APP_ID}, name=f"agentdeck-sbx-{self.id}")
                container.start()
                container.reload()
            except SandboxError:
                raise
            except Exception as exc:
                raise SandboxStartError(
                    f"could not start the sandbox container on the Docker Engine at {daemon.docker_host()} "
                    f"(AGENTDECK_SANDBOX=docker): {type(exc).__name__}: {str(exc)[:300]}") from exc
            self.process = ContainerWorker(client, container, listener, first, log_path, daemon.docker_host())
            if warm:  # connected now, so the worker preloads while it waits for a session
                self.process.connect(limits.startup_timeout_s)
        except BaseException:
            if self.process is None:  # not yet the worker's to release: the socket and the container, if any
                if listener is not None:
                    listener.close()
                if container is not None:
                    try:
                        container.remove(force=True, v=True)
                    except Exception:
                        pass
            self._release()
            raise
        with live_lock:
            live_hosts[self.id] = self

    def _init_command(self, spec: SandboxSpec, workdir_inside: str) -> dict[str, Any]:
        return init_command(
            spec, workdir_inside, self.tmpdir, nice=max(0, min(19, int(spec.limits.nice))),
            extra_read_paths=[], uid=None,  # the container's user is already the sandbox's own
            new_root=image.NEW_ROOT if spec.private_root else None, sys_path=image.site_packages_paths())

    def assign(self, spec: SandboxSpec) -> None:
        """Hand this pooled container to a session: its workspace is bound onto the slot (on this host, so the
        mount appears in the container), then the worker gets its settings and confines itself."""
        ws_slot, worker = self._slot, self.process
        if ws_slot is None or ws_slot.filled or worker is None or worker.dead or spec.workspace is None:
            raise SandboxStartError("this sandbox cannot be assigned a workspace (started cold, already assigned, "
                                    "or gone)")
        if spec.workspace.extra_read_paths:
            raise SandboxStartError(NO_EXTRA_READ)
        self.spec = spec
        os.makedirs(spec.workspace.path, exist_ok=True)
        self.workdir = os.path.realpath(spec.workspace.path)
        limits = spec.limits
        self._disk = DiskLimit(self.workdir, self.tmpdir, int(limits.max_disk_mb), int(limits.max_disk_files),
                               int(limits.min_free_mb))
        try:
            self.push_workspace()  # the workspace handed to the container's user id, as for a cold start
            ws_slot.fill(self.workdir)
            worker.send_settings(self._init_command(spec, ws_slot.path))
        except (ChannelClosed, OSError, SandboxStartError) as exc:
            worker.kill()
            raise SandboxStartError(f"the warm sandbox container did not take its session: {exc}. "
                                    f"{worker.log_tail()}") from exc

    def _limit(self) -> DiskLimit:
        if self._disk is None:
            raise SandboxError("this warm sandbox has no workspace yet (it is waiting in the pool)")
        return self._disk

    def memory_bytes(self) -> int | None:
        """The container's memory cgroup usage (page cache included), read on this host."""
        return cgroup_memory_bytes(self._worker().pid)

    def _worker(self) -> ContainerWorker:
        if self.process is None:
            raise SandboxError("the sandbox container is closed")
        return self.process

    # --- facts -------------------------------------------------------------------------------------------------
    @property
    def pid(self) -> int:
        """The worker's pid on this host (known once it connected: until then the container has only its init)."""
        worker = self._worker()
        if worker.reader is None and not worker.dead:
            worker.connect(self.spec.limits.startup_timeout_s)
        return worker.pid

    @property
    def ready(self) -> dict[str, Any] | None:
        return None if self.process is None else self.process.ready

    @property
    def dead(self) -> bool:
        return self.process is None or self.process.dead

    # --- the channel -----------------------------------------------------------------------------------------
    def wait_ready(self, timeout: float) -> dict[str, Any]:
        return self._worker().wait_ready(timeout)

    def send(self, msg: dict[str, Any], deadline_s: float = SEND_DEADLINE_S) -> None:
        self._worker().send(msg, deadline_s)

    def read(self, timeout: float | None = None, wake_fd: int | None = None,
             spin_s: float = 0.0) -> dict[str, Any] | None:
        return self._worker().read(timeout, wake_fd, spin_s)

    def has_pending(self) -> bool:
        worker = self._worker()
        # A container that ended (killed, out of memory) leaves its channel readable at its end: that is not
        # the code talking between steps; the next send fails and the run reports how the container ended.
        # The select first: an alive() check reads /proc, and only a channel with something on it needs one.
        return worker.reader is not None and worker_watch.has_pending(worker.reader.fd) and worker.alive()

    # --- the watch: the container's process is a process of this host ----------------------------------------
    def freeze(self) -> None:
        self._worker().freeze()

    def thaw(self) -> None:
        self._worker().thaw()

    def woke_up(self) -> bool:
        worker = self._worker()
        # alive() last: it reads /proc, needed only for a worker found running (a zombie is not stopped either).
        return (worker.frozen and not worker.dead
                and worker_watch.woke_up(worker.pid, worker.frozen_at, stat=worker.proc_stat) and worker.alive())

    def cpu_seconds(self) -> float:
        worker = self._worker()
        return worker_watch.cpu_seconds(worker.pid, worker.proc_stat)

    def thread_left_running(self, sample_s: float) -> bool:
        return worker_watch.thread_left_running(_as_process(self._worker()), sample_s)

    def end_of_run(self, sample_s: float) -> tuple[bool, float]:
        return worker_watch.end_of_run(_as_process(self._worker()), sample_s)

    def disk_over(self) -> str | None:
        worker = self._worker()
        return self._limit().over(None if worker.dead else _as_process(worker))

    def check_disk_after_run(self, result: ExecutionResult, workspace: Snapshot | None = None) -> bool:
        worker = self._worker()
        emptied: list[bool] = []
        self._limit().check_after_run(result, None if worker.dead else _as_process(worker),
                                   lambda: emptied.append(True), workspace)
        return bool(emptied)

    def set_min_free_mb(self, value: int) -> None:
        self._limit().min_free_mb = int(value)

    def interrupt(self) -> None:
        if self.process is not None:
            self.process.interrupt()

    def exit_description(self, wait_s: float = 1.0) -> str:
        return self._worker().exit_description(wait_s)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.process is not None:
            self.process.shutdown()
        self._release()

    def _release(self) -> None:
        if self.process is not None:
            # The process is killed from this host even when the engine does not answer; the container's record
            # is then removed by the next sandbox start that reaches an engine (sweep_orphans).
            if self.process.remove() is not None:
                with live_lock:
                    unremoved.add(self.process.container.id)
        if self._slot is not None:  # after the container's process is gone: never a slot without it
            self._slot.release()
        self._release_host_side(live_hosts, live_lock)

    def security_report(self) -> dict[str, dict[str, Any]]:
        worker = self._worker()
        who = f"user id {self._uid} of its own" if self._uid is not None else "the app's user id (the app is not root)"
        return {
            "process": {"active": True, "detail": "separate worker process with a minimal environment"},
            "container": {"active": True, "detail": (
                f"Docker container {worker.container.short_id} at {worker.docker_host}: no network, read-only root "
                f"of the sandbox image, {who}, no capabilities, no new privileges, at most {MAX_TASKS} tasks, "
                f"memory {self.spec.limits.memory_limit_mb + BASELINE_MB} MB (cgroup, page cache counted, no swap), "
                f"{cpus():g} CPU; Docker's seccomp profile replaced by the worker's own filter")},
            "freeze_between_steps": {"active": True, "detail": "the container's process is stopped (SIGSTOP from "
                                     "the app's host) whenever the app is not waiting for it; found running, it is "
                                     "replaced"},
            "thread_check": {"active": True, "detail": "after each step the container process's threads are read "
                             "from /proc/<pid>/task on the host; one not parked in futex restarts it"},
            "cpu_time": {"active": True, "detail": "the container process's CPU time is read from the host's /proc"},
            "disk_limit": {"active": True, "detail": f"workspace and temp folder (bind mounts) held to "
                           f"{self._limit().max_mb} MB and {self._limit().max_files:,} files by the app"},
        }
