"""What a remote backend supplies to run a sandbox elsewhere: one byte stream and the service's file API.

Why so little: a sandbox service (E2B) or a cluster (Kubernetes agent-sandbox) gives the app two things it can
rely on, a process it starts inside the sandbox with its stdin/stdout as one bidirectional stream, and an API to
move files. Everything between that and `PythonSandbox` is the same for every such service and lives in this
package: the supervisor that runs beside the worker inside the sandbox (`supervisor.py`) and the app's
`SupervisedHost` (`host.py`), which re-checks everything the stream and the file API hand back.

A remote backend (e2b, k8s) therefore:
1. creates the sandbox (a pod from its template, a microVM) with the sandbox image's files at their paths
   (`agents/executor/docker/image.py` builds them: the interpreter, the libraries and this package), a writable
   workspace folder and a writable temp folder;
2. starts `supervisor_command(...)` inside it as uid 0 of the sandbox with only the capabilities listed in
   `SUPERVISOR_CAPABILITIES` (no network, no new privileges, a read-only root where the engine can), and wraps
   that process's stdin/stdout as a `ByteStream`;
3. wraps its file API as `RemoteFiles` rooted at the workspace folder;
4. returns `SupervisedHost(stream, files, host_id=..., on_close=..., spec=spec)` from `SandboxBackend.start`.

Both objects are the backend's; `SupervisedHost` never trusts what comes out of them.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..backend import FileInfo
from ..protocol import ChannelClosed

#: The capabilities the supervisor needs inside the sandbox (uid 0 there, every other capability dropped):
#: start the worker as its own user id, signal it (SIGSTOP/SIGCONT/SIGINT/SIGKILL) and read its /proc entries
#: (threads' syscalls, open files) although it is another user's, count the worker's folders, hand them to it.
SUPERVISOR_CAPABILITIES = ("SETUID", "SETGID", "KILL", "SYS_PTRACE", "DAC_READ_SEARCH", "CHOWN", "FOWNER")
#: The worker's user id inside the sandbox (the image's `sandbox` user); never the supervisor's.
WORKER_UID = 1000


class StreamClosed(ChannelClosed):
    """The stream to the remote sandbox ended or broke: the supervisor and the worker's variables are gone."""


@runtime_checkable
class ByteStream(Protocol):
    """One bidirectional byte stream to the supervisor's stdin/stdout (a websocket, an attach socket, an SDK's
    process handle). Bytes only: framing and every check are `SupervisedHost`'s.

    Threads: `read` is called by one thread only (the host's reader); `write` by one thread at a time (the host
    holds a lock); `close` from any thread, and it must make a `read` blocked in another thread return soon
    (b"" or an exception) so the host never hangs on a dead stream.
    """

    def write(self, data: bytes, timeout: float) -> None:
        """Send all of `data` within `timeout` seconds, else raise (`TimeoutError`, `OSError`, `StreamClosed`):
        the host then treats the stream as cut. Never returns having sent part of it silently."""
        ...

    def read(self, max_bytes: int, timeout: float) -> bytes | None:
        """Up to `max_bytes` bytes the supervisor wrote, as soon as some are there; None if none came within
        `timeout` seconds; b"" at the end of the stream. Any exception means the stream is cut."""
        ...

    def close(self) -> None:
        """Release the stream (idempotent, never raises). The supervisor sees its stdin end and kills the worker."""
        ...


@runtime_checkable
class RemoteFiles(Protocol):
    """The service's file API, rooted at the sandbox's workspace folder. Paths are relative POSIX paths already
    checked by the host (no `..`, not absolute, no empty part); the service resolves them inside the sandbox.

    Sizes are capped on both sides: `get` must not move more than `max_bytes` (+ the service's framing) before it
    refuses, and the host checks the length of what it got again.
    """

    def put(self, relpath: str, data: bytes, max_bytes: int) -> None:
        """Write a regular file (folders made as needed), replaced whole, owned so the worker (`WORKER_UID`) may
        change it. `FileTooLarge` (`backend.py`) if `len(data) > max_bytes`."""
        ...

    def get(self, relpath: str, max_bytes: int) -> bytes:
        """A regular file's content; `FileNotFoundError` if absent, `FileTooLarge` over `max_bytes`,
        `PermissionError` if it is not a regular file."""
        ...

    def list(self, max_entries: int) -> dict[str, FileInfo]:
        """Regular files of the workspace at any depth (links not followed), relative path -> size and mtime in
        ns; at most `max_entries` (more: raise `OverflowError`, the host then counts the listing as incomplete)."""
        ...

    def remove(self, relpath: str) -> None:
        """Delete a regular file (a final link is removed itself); `FileNotFoundError` if absent."""
        ...


#: How the sandbox image starts the supervisor with its own Python, as the worker is started: isolated mode, no
#: site, the executor folder loaded as a private package (the app's `agents` package is not in the image).
#: `local` and `remote` are registered bare (their `__init__` imports the app's side, which the image lacks).
SUPERVISOR_BOOT = (
    "import sys,types\n"
    "for n,d in (('',''),('.local','/local'),('.remote','/remote')):\n"
    " m=types.ModuleType('_agentdeck_sandbox'+n);m.__path__=[sys.argv[1]+d];sys.modules[m.__name__]=m\n"
    "from _agentdeck_sandbox.remote.supervisor import main;main(sys.argv[2:])"
)


def supervisor_command(*, workdir: str = "/workspace", tmpdir: str = "/tmp/agentdeck-sbx",
                       worker_uid: int = WORKER_UID, python: str = "/usr/local/bin/python3",
                       package_dir: str = "/opt/agentdeck/executor", new_root: str | None = "/opt/agentdeck/root",
                       sys_path: list[str] | None = None,
                       mpl_cache: str | None = "/opt/agentdeck/mplcache") -> list[str]:
    """The command line that starts the supervisor inside the sandbox (the defaults: the sandbox image's paths,
    `docker/image.py`). `workdir`: the workspace folder (the file API's root); `tmpdir`: a writable folder for
    the worker's temp files, made by the supervisor (its parent must exist and be writable); `sys_path`: the
    worker's import path (default: the image's site-packages, as the Docker backend's); `mpl_cache`: a read-only
    matplotlib font cache copied for the worker (None: none). Where `agents` is importable (a checkout), the same
    arguments work with `python -m agents.executor.remote.supervisor`."""
    if sys_path is None:
        from ..docker.image import site_packages_paths

        sys_path = site_packages_paths()
    cmd = [python, "-I", "-S", "-B", "-c", SUPERVISOR_BOOT, package_dir, "--workdir", workdir, "--tmpdir", tmpdir,
           "--worker-uid", str(worker_uid), "--sys-path", ":".join(sys_path)]
    if new_root:
        cmd += ["--new-root", new_root]
    if mpl_cache:
        cmd += ["--mpl-cache", mpl_cache]
    return cmd
