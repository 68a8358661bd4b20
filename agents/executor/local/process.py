"""Layer 3: the worker process, started from a minimal environment.

The worker is started as ``python -I -S -B -c BOOT``: isolated mode ignores
PYTHON* variables and the user site, ``-S`` skips the ``site`` module so no
``.pth`` file or ``sitecustomize`` is ever executed (the app passes its own,
already computed ``sys.path`` instead, without the app's folder), the bootstrap
loads this folder as a private package (the app's ``agents`` package is never
imported), and the environment holds only a few harmless variables plus what the
app explicitly passes. Every thread pool (BLAS, OpenMP, numexpr) is limited to
the calling thread: the worker must be single-threaded when it confines itself.
Commands and results travel over two pipes on fds other than 0/1/2, so nothing
the code prints at the C level can corrupt the channel.
"""

from __future__ import annotations

import atexit
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from typing import Any

from ..errors import SandboxStartError
from ..protocol import ChannelClosed, FrameReader, frame

SEND_DEADLINE_S = 10.0  # how long a command may wait for the worker to read it
WORKER_FRAME_BYTES = 16 * 1024 * 1024
WORKER_FRAME_CONTAINERS = 100_000


class WorkerUnresponsive(ChannelClosed):
    """The worker did not read a command in time (it is stuck or misbehaving); it is restarted."""

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # agents/executor: the worker's package
APP_ROOT = os.path.dirname(os.path.dirname(PACKAGE_DIR))
BOOT = (
    "import sys,types;p=types.ModuleType('_agentdeck_sandbox');p.__path__=[sys.argv[1]];"
    "sys.modules['_agentdeck_sandbox']=p;from _agentdeck_sandbox.worker import main;main(sys.argv)"
)


def shared_mpl_cache() -> str:
    """A per-user matplotlib cache (font list), filled by workers before confinement."""
    path = os.path.join(tempfile.gettempdir(), f"agentdeck-mplcache-{os.getuid()}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def minimal_env(tmpdir: str, extra: dict[str, str] | None) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": tmpdir,
        "TMPDIR": tmpdir,
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": shared_mpl_cache(),
    }
    for key, value in (extra or {}).items():
        env[str(key)] = str(value)
    env.update(SINGLE_THREAD_ENV)  # after the extras: a pool started before confinement escapes Landlock
    return env


SINGLE_THREAD_ENV = {name: "1" for name in (
    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
    "NUMEXPR_MAX_THREADS", "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS", "GOTO_NUM_THREADS")}
SINGLE_THREAD_ENV["JE_ARROW_MALLOC_CONF"] = "background_thread:false"  # pyarrow's allocator, loaded by pandas
# pyarrow's default pool (mimalloc) reserves 1 GiB of address space on first use: the whole default memory limit,
# so a fresh sandbox's first pandas string operation could fail. The system allocator reserves nothing.
SINGLE_THREAD_ENV["ARROW_DEFAULT_MEMORY_POOL"] = "system"


def worker_sys_path() -> list[str]:
    """The app's import path for the worker, without the app's own folder (or anything that contains it)."""
    app = os.path.realpath(APP_ROOT)
    out: list[str] = []
    for entry in sys.path:
        if not entry:
            continue
        real = os.path.realpath(entry)
        if real == app or app.startswith(real.rstrip("/") + "/") or not os.path.isdir(real):
            continue
        if real.startswith(app + "/") and "site-packages" not in real and "dist-packages" not in real:
            continue  # the app's own source folders; a virtual environment inside it stays
        if real not in out:
            out.append(real)
    return out


_swept = False
_live_workers: weakref.WeakSet[WorkerProcess] = weakref.WeakSet()


APP_ARG = "agentdeck-app:"  # the worker's last argument: APP_ARG + the pid of the app that started it


def _orphan(pid: str) -> bool:
    """Whether process `pid` is a sandbox worker whose app is gone. A worker's command line is the bootstrap
    (BOOT) and ends with its app's pid; a worker of a live app (this process or another) has that app as its
    parent. Once the app died the worker was handed to init or to a subreaper (a container's init, systemd),
    so its parent is no longer the pid it names. Workers started before the pid was passed: parent 1.
    A process of another pid namespace (a container's, e.g. a remote sandbox's worker under its supervisor,
    `remote/supervisor.py`) is never one: the pid it names is of that namespace, not this one's."""
    try:
        if os.readlink(f"/proc/{pid}/ns/pid") != os.readlink("/proc/self/ns/pid"):
            return False
    except OSError:
        pass  # not ours to inspect (another user's process): judged by its parent as before
    with open(f"/proc/{pid}/stat", "rb") as fh:
        ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
    with open(f"/proc/{pid}/cmdline", "rb") as fh:
        args = fh.read().split(b"\0")
    if BOOT.encode() not in args:
        return False
    named = next((a[len(APP_ARG):] for a in reversed(args) if a.startswith(APP_ARG.encode())), b"")
    if named.isdigit():
        return ppid != int(named)
    return ppid == 1


def sweep_orphans(force: bool = False) -> int:
    """Kill sandbox workers whose app died without closing them; how many were killed. Once per process
    (the app calls it at start-up, ui/services.py; every sandbox start calls it too, a no-op after the first)
    unless `force`.

    A worker is stopped (SIGSTOP) whenever its app is not waiting for it, so when the app is killed (`kill -9`)
    it cannot notice its channel closing: it would stay, stopped, holding its memory. See `_orphan`.
    """
    global _swept
    if _swept and not force:
        return 0
    _swept = True
    killed = 0
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if _kill_if_orphan(int(entry)):
                killed += 1
        except (OSError, ValueError, IndexError):
            continue
    return killed


def _kill_if_orphan(pid: int) -> bool:
    """SIGKILL `pid` if it is an orphaned worker. The process is pinned first (a pidfd), then examined, then
    signalled through the pidfd: a pid freed and reused meanwhile is never the one killed."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError) as exc:
        if isinstance(exc, ProcessLookupError):
            return False
        if not _orphan(str(pid)):  # no pidfds (old kernel): examine and kill by pid
            return False
        os.kill(pid, signal.SIGKILL)
        return True
    try:
        if not _orphan(str(pid)):
            return False
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        return True
    finally:
        os.close(pidfd)


def _kill_live_workers() -> None:
    """At interpreter exit: a stopped worker would outlive the app (see sweep_orphans)."""
    for worker in list(_live_workers):
        try:
            worker.kill()
        except Exception:
            pass


atexit.register(_kill_live_workers)


class WorkerProcess:
    """One running worker: its process, its two pipes and its ready report."""

    def __init__(self, init: dict[str, Any], env: dict[str, str], workdir: str, log_path: str,
                 python: str | None = None, start_dir: str | None = None, user: int | None = None,
                 owner: str | None = None):
        """`user`: start the worker as that user id (and group, no other groups) instead of this process's; the
        remote sandbox's supervisor (`remote/supervisor.py`) runs as another user than its worker. `owner`: what
        the worker's last argument names after APP_ARG (default this process's pid; see `_orphan`)."""
        sweep_orphans()
        cmd_r, cmd_w = os.pipe()
        res_r, res_w = os.pipe()
        self.log_path = log_path
        self._log_fd = -1
        try:
            # The worker's stdout/stderr: a file in its own temp folder (counted against its disk limit), read
            # back by the app only through this descriptor, so neither renaming nor a link put in its place
            # can make the app read or show another file.
            log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
                          0o600)  # a fresh, unguessable name: nothing can be planted in its place
            try:
                self._log_fd = os.open(log_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
                self.proc = subprocess.Popen(
                    [python or sys.executable, "-I", "-S", "-B", "-c", BOOT, PACKAGE_DIR, str(cmd_r), str(res_w),
                     f"{APP_ARG}{owner or os.getpid()}"],
                    pass_fds=(cmd_r, res_w), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                    # Not the workspace: libraries preloaded before confinement read files from their current
                    # folder (./matplotlibrc), and the workspace is written by the code.
                    env=env, cwd=start_dir or workdir, start_new_session=True, close_fds=True,
                    user=user, group=user, extra_groups=None if user is None else [],
                )
            finally:
                os.close(log)
        except OSError as exc:
            for fd in (cmd_r, cmd_w, res_r, res_w, self._log_fd):
                if fd >= 0:
                    os.close(fd)
            raise SandboxStartError(f"could not start the sandbox worker: {exc}") from exc
        os.close(cmd_r)
        os.close(res_w)
        self.cmd_fd = cmd_w
        os.set_blocking(cmd_w, False)  # a worker that stops reading (or shrinks the pipe) cannot block the app
        # What a worker may send: results and logs are bounded far below this; a frame of millions of nested
        # lists would cost the app gigabytes to parse.
        self.reader = FrameReader(res_r, max_bytes=WORKER_FRAME_BYTES, max_containers=WORKER_FRAME_CONTAINERS)
        self.ready: dict[str, Any] | None = None
        self.dead = False
        self.frozen = False
        self.frozen_at = 0.0
        self.idle_cpu: float | None = None  # CPU time when its last run ended (the app's reading)
        _live_workers.add(self)
        self.send(init)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, msg: dict[str, Any], deadline_s: float = SEND_DEADLINE_S) -> None:
        """Send a command and thaw the worker; WorkerUnresponsive if it does not take it in time.

        What the pipe takes is written before the SIGCONT: a stopped worker (parked in its read) then finds the
        whole command when it continues, one wake-up instead of two (the SIGCONT, then the data). The rest of a
        command larger than the pipe follows once it runs."""
        data = memoryview(frame(msg))
        try:
            data = data[os.write(self.cmd_fd, data):]
        except BlockingIOError:
            pass
        self.thaw()
        deadline = time.monotonic() + deadline_s
        while data:
            try:
                data = data[os.write(self.cmd_fd, data):]
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([], [self.cmd_fd], [], left)[1]:
                    raise WorkerUnresponsive("the sandbox worker stopped reading its commands") from None

    def freeze(self) -> None:
        """Stop every thread of the worker while the app does not wait for it: between steps nothing of the
        code may run (a thread it left behind, a timer, a handler)."""
        if not self.dead and not self.frozen:
            try:
                os.kill(self.proc.pid, signal.SIGSTOP)
                self.frozen = True
                self.frozen_at = time.monotonic()
            except ProcessLookupError:
                pass

    def thaw(self) -> None:
        if self.frozen and not self.dead:
            self.frozen = False
            try:
                os.kill(self.proc.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        if self.ready is None:
            try:
                msg = self.reader.read(timeout=timeout)
            except Exception as exc:
                raise SandboxStartError(f"the sandbox worker failed to start: {exc}. {self.log_tail()}") from exc
            if msg is not None and msg.get("op") == "refused":
                self.kill()
                raise SandboxStartError(f"the sandbox refused to start: {str(msg.get('error'))[:1000]}")
            if msg is None or msg.get("op") != "ready":
                self.kill()
                raise SandboxStartError(f"the sandbox worker did not become ready. {self.log_tail()}")
            self.ready = msg
        return self.ready

    def interrupt(self) -> None:
        if not self.dead:
            try:
                os.kill(self.proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass

    def exit_description(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "still running"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            why = {"SIGKILL": " (possibly out of memory)", "SIGXCPU": " (CPU time limit)",
                   "SIGSEGV": " (crash, e.g. a C-level stack overflow)"}.get(name, "")
            return f"killed by {name}{why}"
        return f"exited with code {code}"

    def log_tail(self, chars: int = 400) -> str:
        try:
            size = os.fstat(self._log_fd).st_size
            text = os.pread(self._log_fd, chars, max(0, size - chars)).decode("utf-8", "replace").strip()
        except OSError:
            return ""
        return f"Worker log: {text}" if text else ""

    def kill(self) -> None:
        """Stop the process and release its pipes (idempotent)."""
        if not self.dead:
            self.dead = True
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            for fd in (self.cmd_fd, self.reader.fd, self._log_fd):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._log_fd = -1
            try:
                os.unlink(self.log_path)  # never follows a link; a later worker gets a log of its own
            except OSError:
                pass

    def shutdown(self) -> None:
        """Ask the worker to exit, then kill it. A worker never seen ready has run no code and may still be
        importing its libraries (it would read the exit command only after that): it is killed at once rather
        than waited for."""
        if not self.dead and self.ready is not None:
            try:
                self.send({"op": "exit"}, deadline_s=0.2)
                self.proc.wait(timeout=0.5)
            except (OSError, subprocess.TimeoutExpired, WorkerUnresponsive):
                pass
        self.kill()
