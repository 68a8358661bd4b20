"""The sandbox backend protocol: how `PythonSandbox` starts, talks to and watches a sandbox, whatever runs it.

Why: `PythonSandbox` (the public API) keeps the rules that make a sandbox trustworthy to the app: one result per
run for the current run id, sizes re-checked, the timeout on compute time, nothing running between steps, the
disk limit. How a sandbox is started, where its worker runs and how the app reads what the kernel says about it
is the backend's: the local worker (`agents/executor/local/`), a Docker container (`agents/executor/docker/`),
later a remote pod. A backend starts a sandbox from a typed `SandboxSpec` and hands back a `SandboxHost`: one
two-way stream of the worker's length-prefixed JSON frames (`protocol.py`; the worker is the same program on
every backend), the watch operations the app uses between and during steps (each behind a `Capabilities` flag),
the workspace's files with size caps, and close.

The contract, for a new backend:
- **Everything the host returns from the worker is hostile.** `read` gives one decoded frame bounded in bytes and
  nesting (`FRAME_MAX_BYTES`, `FRAME_MAX_CONTAINERS`) or raises; `PythonSandbox` and `run_watch.py` check what it
  says. The host never interprets frames beyond that (no `op` it trusts).
- **Watch figures come from outside the worker** (the kernel, the container engine, a supervisor next to the
  worker), never from the worker's own channel. A host that cannot read one says so: its capability flag is
  False, the method returns the neutral value documented below, and `security_report()` lists the promise as
  not held (`active: False` with the reason).
- **A host is one worker's life.** A restart is `close()` and a new `start()`: nothing of the old worker (its
  temp folder, its memory, its user id) is carried over; only the workspace is. A used host is never given to
  another sandbox.
- **Thread safety:** `PythonSandbox` calls a host from one thread at a time, except `interrupt()` and `kill()`,
  which may come from any thread while another waits in `read`.

Registry and names: `agents/executor/backends.py` (`available()`, `get(name)`; the app's `AGENTDECK_SANDBOX` names one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .artifacts import Snapshot
    from .execution_result import ExecutionResult

SEND_DEADLINE_S = 10.0  # how long `send` may wait for the worker to take a command
FRAME_MAX_BYTES = 16 * 1024 * 1024  # the largest frame a host accepts from a worker
FRAME_MAX_CONTAINERS = 100_000  # the most lists/objects in one frame (parsing millions would cost gigabytes)
FILE_MAX_BYTES = 100 * 1024 * 1024  # the default cap of `get_file`/`put_file`


@dataclass(frozen=True)
class SandboxLimits:
    """What one sandbox may use; the `PythonSandbox` constructor's parameters of the same names (and meaning)."""

    timeout_s: float = 30
    memory_limit_mb: int = 1024
    max_output_chars: int = 20000
    max_result_chars: int = 100_000
    max_file_size_mb: int = 100
    max_files_written: int = 200
    max_open_files: int = 256
    max_disk_mb: int = 1024
    max_disk_files: int = 20_000
    min_free_mb: int = 0  # the shared disk's floor; the only limit that may change later (`set_min_free_mb`)
    nice: int = 5
    startup_timeout_s: float = 120


@dataclass(frozen=True)
class WorkspaceSpec:
    """The session's files: `path` is the app's folder of them (it outlives every host of the sandbox).

    A backend whose worker does not see the app's disk copies or mounts it; either way the app reads and writes
    the workspace only through the host's file operations, except where `Capabilities.same_disk` says `path` is
    the very folder the worker writes (the local backend; `push_workspace`/`pull_workspace` keep the two
    in step otherwise). `extra_read_paths`: folders of the app's machine the
    code may read (local backend only; others refuse a spec that names any: `SandboxStartError`).
    """

    path: str
    extra_read_paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class SandboxSpec:
    """Everything a backend needs to start one sandbox: its imports, its limits, its workspace, its layers.

    `workspace` None: a warm start (`Capabilities.warm_start`, `pool.py`): the backend starts what does not depend
    on the session (the process or container, the preloaded imports) and the host waits for `assign(spec)`.
    `tools`: the tool names the worker starts with (it is told of later ones over the channel). `env`: extra
    environment variables for the worker (never the app's own environment). `use_landlock`, `use_seccomp`,
    `private_root`: the kernel layers the app may switch off (each reported); `python_layers=False` only for the
    attack test suite (no guard, the real builtins: the kernel layers must hold on their own). `owner`: an opaque
    tag naming whose sandbox this is (the app: a keyed hash of the saved chat, `ui/saved/sandbox_record.py`); a
    backend whose sandboxes outlive the app records it in the sandbox out of the worker's reach, and `attach` with
    an `expect` spec refuses a sandbox recorded for another owner.
    """

    workspace: WorkspaceSpec | None
    authorized_imports: tuple[str, ...] = ()
    limits: SandboxLimits = SandboxLimits()
    tools: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    use_landlock: bool = True
    use_seccomp: bool = True
    private_root: bool = True
    python_layers: bool = True
    owner: str = ""


def attach_mismatch(recorded: SandboxSpec, expect: SandboxSpec) -> str | None:
    """Why a sandbox started as `recorded` is not the one a caller expecting `expect` may attach (another owner,
    other imports or layers), or None. Compared in constant time for the owner tag."""
    import hmac

    if not expect.owner or not hmac.compare_digest(recorded.owner.encode(), expect.owner.encode()):
        return "it was started for another chat"
    if tuple(sorted(recorded.authorized_imports)) != tuple(sorted(expect.authorized_imports)):
        return "it was started with other imports"
    if (recorded.use_landlock, recorded.use_seccomp, recorded.private_root, recorded.python_layers) != \
            (expect.use_landlock, expect.use_seccomp, expect.private_root, expect.python_layers):
        return "it was started with other isolation layers"
    return None


@dataclass(frozen=True)
class Capabilities:
    """What a backend's hosts can do; `PythonSandbox` skips what is False and the security report says so.

    - `suspend`: `freeze`/`thaw` really stop every thread of the worker (between steps nothing of the code runs),
      and `woke_up` can tell a frozen worker found running.
    - `thread_check`: `thread_left_running` reads the worker's threads from outside it.
    - `cpu_time`: `cpu_seconds` reads the worker's CPU time from outside it (the timeout counts compute time
      while tools run; a worker busy between steps is replaced).
    - `disk_usage`: `disk_over` counts the sandbox's files (workspace and temp, deleted-but-open included).
    - `same_disk`: `WorkspaceSpec.path` is the folder the worker writes, so artifacts' `abs_path` is a real file
      of the app's machine at once (otherwise the host copies the workspace back: see `pull_workspace`).
    - `attach`: `SandboxBackend.attach` can find a live host by id (from this process at least).
    - `attach_elsewhere`: the sandbox outlives the app's process, so another process (another replica, or this
      app after a restart) can attach it by id: a saved chat records the id (E2B, Kubernetes). A local worker or
      a Docker container is the app's own (its channel is the app's pipe; a container whose app is gone is swept).
    - `warm_start`: `start` takes a spec without a workspace and `assign` completes it later (the pool keeps such
      hosts ready); without it the pool keeps nothing for the backend and every start is cold.
    """

    suspend: bool = False
    thread_check: bool = False
    cpu_time: bool = False
    disk_usage: bool = False
    same_disk: bool = False
    attach: bool = False
    warm_start: bool = False
    attach_elsewhere: bool = False


@dataclass(frozen=True)
class FileInfo:
    """One regular file of the workspace as the host sees it: size in bytes and modification time (ns)."""

    size: int
    mtime_ns: int


class FileTooLarge(OSError):
    """A workspace file is over the cap the caller gave; nothing was read or written."""


@runtime_checkable
class SandboxHost(Protocol):
    """One running sandbox as the app sees it: its channel, its watch, its files. See the module docstring.

    Attributes: `id` (unique among the backend's live hosts; what `attach` takes), `capabilities`, `ready` (the
    worker's ready frame once `wait_ready` saw it, else None), `dead` (the worker is gone: killed or exited).
    """

    id: str
    capabilities: Capabilities

    @property
    def ready(self) -> dict[str, Any] | None: ...

    @property
    def dead(self) -> bool: ...

    def assign(self, spec: SandboxSpec) -> None:
        """Complete a warm host (started from a spec without a workspace) for one session: `spec` is the start
        spec with its workspace (and tools) filled in; its other fields equal the start spec's (the pool's key).
        After it the host behaves as one started from `spec`. Only once, before `wait_ready`; `SandboxStartError`
        on a host that was not started warm or is dead."""
        ...

    # --- the channel -----------------------------------------------------------------------------------------
    def wait_ready(self, timeout: float) -> dict[str, Any]:
        """Wait for the worker's first frame and return it (cached in `ready`; later calls return it at once).

        It must be `{"op": "ready", "layers": [...], ...}`; a `refused` frame, any other frame, a closed channel
        or `timeout` seconds of silence kill the worker and raise `SandboxStartError` with the reason (and what
        the worker printed, if the backend can read it). The worker is left running: the caller freezes it.
        `PythonSandbox` checks the frame's shape itself (`protocol.ready_problem`: bounded layers and warnings)
        before it logs or reports any of it, whichever backend it came through."""
        ...

    def send(self, msg: dict[str, Any], deadline_s: float = SEND_DEADLINE_S) -> None:
        """Thaw the worker if frozen, then write `msg` as one frame, never blocking longer than `deadline_s`.

        Raises `ChannelClosed` (`protocol.py`) if the worker is gone, and a subclass of it if the worker did not
        take the frame in time (it is stuck or misbehaving: the caller restarts it)."""
        ...

    def read(self, timeout: float | None = None, wake_fd: int | None = None,
             spin_s: float = 0.0) -> dict[str, Any] | None:
        """The worker's next frame, decoded: a dict, bounded by `FRAME_MAX_BYTES`/`FRAME_MAX_CONTAINERS`.

        None when `timeout` passes or `wake_fd` (a pipe the app writes to end a wait) becomes readable first.
        `spin_s`: poll for that long before sleeping (a reply expected within milliseconds comes sooner; a
        backend for which polling means nothing may ignore it). Raises `ChannelClosed` when the worker closed
        its end or died, `ProtocolError` for a frame over the bounds or not a JSON object."""
        ...

    def has_pending(self) -> bool:
        """Whether the worker wrote something not yet read (asked between runs, when it must be silent)."""
        ...

    # --- the watch (each behind a capability; the neutral value when the capability is False) ------------------
    def freeze(self) -> None:
        """Stop every thread of the worker until the next `send`/`thaw` (`suspend`; else no-op). Idempotent."""
        ...

    def thaw(self) -> None:
        """Let a frozen worker run again (`suspend`; else no-op). Idempotent."""
        ...

    def woke_up(self) -> bool:
        """Whether a worker frozen a while ago is found running (something sent it SIGCONT, which only code of the
        sandbox could have arranged). False when not frozen, frozen only just now, or without `suspend`."""
        ...

    def cpu_seconds(self) -> float:
        """User plus system CPU time of the worker so far, all threads (`cpu_time`; else 0.0)."""
        ...

    def thread_left_running(self, sample_s: float) -> bool:
        """Whether a thread besides the worker's main one still runs (not parked in futex), sampled for up to
        `sample_s` so a thread just ending gets a moment (`thread_check`; else False)."""
        ...

    def end_of_run(self, sample_s: float) -> tuple[bool, float]:
        """After a run's result, before `freeze`: `thread_left_running(sample_s)` and then `cpu_seconds()`, in one
        call so a host that reads both from the same place (a process's stat) reads it once when the worker has
        one thread (the usual case; a second thread is sampled as `thread_left_running` does)."""
        ...

    def disk_over(self) -> str | None:
        """Why the sandbox's files (workspace and private temp, plus files the worker deleted but holds open) are
        over `max_disk_mb`/`max_disk_files`, or the disk under them below `min_free_mb` free; None when within.
        Cheap enough to call once a second while code runs; fails closed (a count it cannot finish is over).
        Without `disk_usage`: None."""
        ...

    def check_disk_after_run(self, result: ExecutionResult, workspace: Snapshot | None = None) -> bool:
        """After a run: if `disk_over()`, add a `DiskLimitError` to `result` saying why. Returns True when the
        private temp folder holds what the code left there (or deleted files still open): the caller then
        restarts the sandbox (a new host starts with an empty temp folder) and marks the state lost.
        `workspace`: this host's `snapshot()` taken after the run with the worker frozen; a host that counts the
        workspace on the app's disk may use its count instead of walking the workspace again (only when that
        walk was complete)."""
        ...

    def set_min_free_mb(self, value: int) -> None:
        """Change the shared disk's floor (the one limit the app may change on a live sandbox)."""
        ...

    def interrupt(self) -> None:
        """Deliver SIGINT to the worker's main thread (KeyboardInterrupt in the code). Any thread; no-op if dead."""
        ...

    def exit_description(self, wait_s: float = 1.0) -> str:
        """How the worker ended (`killed by SIGKILL (possibly out of memory)`, `exited with code 1`), waiting up
        to `wait_s` for it to end; `still running` if it has not."""
        ...

    def kill(self) -> None:
        """End the worker now and release its channel (any thread; idempotent). `close` is still needed."""
        ...

    def close(self) -> None:
        """Ask the worker to exit (briefly), kill it, and release everything the host holds but the workspace:
        temp folder, user id, container. Idempotent; after it no method but `close` and `dead` may be called."""
        ...

    # --- the workspace's files ----------------------------------------------------------------------------
    def list_files(self) -> dict[str, FileInfo]:
        """Regular files of the workspace by relative POSIX path, links never followed, at any depth a path can
        name, bounded in number (`artifacts.MAX_ENTRIES`); read by the app, not reported by the worker."""
        ...

    def get_file(self, relpath: str, max_bytes: int = FILE_MAX_BYTES) -> bytes:
        """The content of a regular file of the workspace. Refuses (`PermissionError`) a path that leaves the
        workspace, names a link at any depth or is not a regular file; `FileTooLarge` above `max_bytes`;
        `FileNotFoundError` if absent."""
        ...

    def put_file(self, relpath: str, data: bytes, max_bytes: int = FILE_MAX_BYTES, exclusive: bool = False) -> None:
        """Write a regular file of the workspace (folders made as needed), owned so the worker can change it.
        Same refusals as `get_file`; the file is replaced whole, never written through a link. `exclusive`:
        `FileExistsError` if anything has the name (a link, a folder), decided where the file is made (an upload
        never replaces what the code left there)."""
        ...

    def remove_file(self, relpath: str) -> None:
        """Delete a regular file of the workspace (never a folder), every folder on the way taken without links:
        a folder swapped for a link after the app listed the file never leads the delete out of the workspace.
        Same refusals as `get_file` (a final link is removed itself, never followed); `FileNotFoundError` if
        absent."""
        ...

    def push_workspace(self) -> str | None:
        """Before each run: files the app put in `WorkspaceSpec.path` (uploads, a restored chat) become the
        worker's to change (local: handed to its user id; a backend without `same_disk` copies them in).
        Returns None when all of it was, else why not (told to the person in the run's output)."""
        ...

    def snapshot(self) -> Snapshot:
        """The workspace's regular files (relative path -> size, mtime) at any depth, links never followed, and
        what could not be listed (`Snapshot.notes()`): the run's files are the difference of two of these."""
        ...

    def push_and_snapshot(self) -> tuple[str | None, Snapshot]:
        """Before each run: `push_workspace()`, then `snapshot()`, in one walk of the workspace where the host
        can (the snapshot is then the one a walk of its own would give, else it walks again)."""
        ...

    def pull_workspace(self) -> None:
        """After each run: make `WorkspaceSpec.path` hold what the worker's workspace holds now, for backends
        without `same_disk` (regular files only, never through a link, within the disk limits); a no-op where
        the worker writes that folder itself."""
        ...

    def memory_bytes(self) -> int | None:
        """Memory the sandbox holds now as its engine counts it (local: the worker's proportional set size;
        a container: its cgroup's usage), or None if unknown. For the bench and the operator, not a limit."""
        ...

    def security_report(self) -> dict[str, dict[str, Any]]:
        """The layers this host adds or cannot hold, as `{name: {"active": bool, "detail": str}}`: at least
        `freeze_between_steps`, `thread_check`, `cpu_time`, `disk_limit` (from its capabilities, with the reason
        when inactive), and the backend's own boundary (`process`, `container`, ...). Merged by
        `PythonSandbox.security_report` with the worker's own layers from its ready frame."""
        ...


@runtime_checkable
class SandboxBackend(Protocol):
    """A way to run sandboxes: `name` (what `AGENTDECK_SANDBOX` and `--sandbox` take) and `capabilities`."""

    name: str
    capabilities: Capabilities

    def unavailable_reason(self) -> str | None:
        """None if this machine can start sandboxes with this backend now; else why not, in a sentence a person
        can act on (`docker is not installed`, `the image agentdeck-sandbox is not built: make sandbox-image`).
        Must be quick (under a second) and must not start anything."""
        ...

    def start(self, spec: SandboxSpec) -> SandboxHost:
        """Start one sandbox: returns as soon as the worker is started (not waited for: `wait_ready` does). The
        host's workspace is `spec.workspace.path`, taken over so the worker can change the files in it. Raises
        `SandboxStartError` with the reason when it cannot start."""
        ...

    def attach(self, host_id: str, expect: SandboxSpec | None = None) -> SandboxHost:
        """The live host of that id (`capabilities.attach`); `SandboxError` if there is none or it is not
        this backend's to give. `expect`: the spec the caller would start now; the sandbox must have been started
        for its `owner` with its imports and layers (`attach_mismatch`), else `SandboxError` and the sandbox is
        left untouched (an id read back from storage is hostile: it may name another chat's sandbox). Its
        workspace is the caller's copy of the files, where the backend keeps one. A host whose `ready` is set
        holds the worker that was running (its variables); one whose `ready` is None started a new worker."""
        ...
