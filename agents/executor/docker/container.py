"""One sandbox worker in its own Docker container, and the app's end of its channel.

The container: no network, read-only root, a user id of its own, every capability dropped, no new privileges,
pids, memory (cgroup: page cache counted, no swap) and CPU limits; the workspace and the private temp folder are
bind-mounted at their own paths (the app keeps counting them against the disk limit, as for the local worker).
Inside runs the project's own worker, which applies its kernel layers (private view, Landlock, seccomp, limits)
before any code runs, exactly as on the app's machine.

The channel: a unix socket the app listens on in an app-private folder mounted into the container, which the
bootstrap connects to before anything else (32 us a round trip, against 0.17-0.22 ms for the stdio of an
attached ``docker run -i``). The app accepts one connection, only from the worker (``SO_PEERCRED``: the
only child of the container's init, Docker's docker-init), and then closes the listener. That peer is the
worker's pid on this host, which the app signals directly: SIGSTOP/SIGCONT between steps (stopped within 32 us,
median, against 10-33 ms for ``docker pause`` on the development machine), SIGINT for the timeout, and
``/proc/<pid>`` for CPU time and threads.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import stat
import struct
import time
from typing import Any

from ..errors import SandboxStartError
from ..local.proc_stat import ProcStat
from ..protocol import ChannelClosed, FrameReader, frame

FRAME_BYTES = 16 * 1024 * 1024
FRAME_CONTAINERS = 100_000
LABEL = "agentdeck.sandbox"
#: The bootstrap, run with the image's own Python as ``python -I -S -B -c BOOT <worker dir> <socket> <log>
#: <mpl cache>``: connect, send stdout/stderr to the log (in the temp folder, counted by the disk limit),
#: give matplotlib a writable copy of the image's font cache (in the app-private folder, which the worker's
#: private view leaves out once it is confined), then the worker's ``main`` with the argv a local worker has
#: (``<worker dir> <fd in> <fd out>``, here one socket both ways).
BOOT = """
import os,socket,sys,types
s=socket.socket(socket.AF_UNIX,socket.SOCK_STREAM);s.connect(sys.argv[2]);fd=s.detach()
log=os.open(sys.argv[3],os.O_WRONLY|os.O_CREAT|os.O_EXCL|os.O_APPEND|os.O_NOFOLLOW,0o600);os.dup2(log,1);os.dup2(log,2)
os.close(log);os.close(0);os.open('/dev/null',os.O_RDONLY)
cache=os.environ['MPLCONFIGDIR'];os.makedirs(cache,0o700,exist_ok=True)
for n in os.listdir(sys.argv[4]):
    src=open(os.path.join(sys.argv[4],n),'rb');dst=open(os.path.join(cache,n),'wb');dst.write(src.read());src.close();dst.close()
p=types.ModuleType('_agentdeck_sandbox');p.__path__=[sys.argv[1]];sys.modules['_agentdeck_sandbox']=p
from _agentdeck_sandbox.worker import main
sys.argv[2:]=[str(fd),str(fd)]
main(sys.argv)
"""


class ContainerUnresponsive(ChannelClosed):
    """The worker in the container did not read a command in time; it is replaced."""


class ContainerWorker:
    """The running container, its host pid and its channel (the same duties as the local WorkerProcess)."""

    def __init__(self, client: Any, container: Any, listener: socket.socket, init: dict[str, Any],
                 log_path: str, docker_host: str):
        self.client = client
        self.container = container
        self.docker_host = docker_host
        self._listener = listener
        self._init = init
        self.log_path = log_path
        self.ready: dict[str, Any] | None = None
        self.reader: FrameReader | None = None
        self.sock: socket.socket | None = None
        self.dead = False
        self.frozen = False
        self.frozen_at = 0.0
        # The container's init (Docker's docker-init, a tini) until the worker, its only child, connects: then the
        # worker's own pid on this host, which the app signals and reads in /proc.
        self.init_pid = int(container.attrs["State"]["Pid"])
        if self.init_pid <= 0:
            raise SandboxStartError("the sandbox container started but has no process on this host")
        self.pid = self.init_pid
        self.proc_stat = ProcStat(self.pid)  # the init's until the worker connects, then the worker's
        self._exit: str | None = None

    # --- channel -----------------------------------------------------------------------------------------------
    def connect(self, timeout: float) -> FrameReader:
        if self.reader is not None:
            return self.reader
        if self.dead:
            raise ChannelClosed("the sandbox container is gone")
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SandboxStartError(f"the sandbox container did not connect within {timeout:.0f} s. "
                                        f"{self.log_tail()}")
            if select.select([self._listener], [], [], min(left, 0.5))[0]:
                conn, _ = self._listener.accept()
                pid, _uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
                if _parent(pid) != self.init_pid:  # only the container's worker may be the channel's other end
                    conn.close()
                    continue
                self.pid = pid
                self.proc_stat.close()
                self.proc_stat = ProcStat(pid)
                break
            if not _alive(self.init_pid):
                raise SandboxStartError(f"the sandbox container ended before connecting: {self.exit_description()}. "
                                        f"{self.log_tail()}")
        self._listener.close()
        self.sock = conn
        fd = conn.fileno()
        os.set_blocking(fd, False)
        self.reader = FrameReader(fd, max_bytes=FRAME_BYTES, max_containers=FRAME_CONTAINERS)
        self._write(frame(self._init), 10.0)
        return self.reader

    def _write(self, data_bytes: bytes, deadline_s: float, thaw: bool = False) -> None:
        """Write a frame; `thaw`: SIGCONT the worker after what the socket takes at once (a stopped worker then
        finds the command when it continues: one wake-up instead of two), before waiting for room."""
        if self.sock is None:
            raise ChannelClosed("the sandbox container is not connected")
        data = memoryview(data_bytes)
        fd = self.sock.fileno()
        deadline = time.monotonic() + deadline_s
        while data:
            try:
                data = data[os.write(fd, data):]
                blocked = False
            except BlockingIOError:
                blocked = True
            except OSError as exc:
                raise ChannelClosed(f"the sandbox container's channel closed: {exc}") from exc
            if thaw:
                thaw = False
                self.thaw()
            elif blocked:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([], [fd], [], left)[1]:
                    raise ContainerUnresponsive("the sandbox worker stopped reading its commands") from None

    def send_settings(self, init: dict[str, Any]) -> None:
        """A warm start: the session's settings, after the ``preload`` frame the worker got when it connected."""
        self.connect(10.0)
        self._write(frame(init), 10.0)

    def send(self, msg: dict[str, Any], deadline_s: float) -> None:
        self.connect(deadline_s)
        self._write(frame(msg), deadline_s, thaw=True)

    def read(self, timeout: float | None, wake_fd: int | None, spin_s: float) -> dict[str, Any] | None:
        reader = self.connect(timeout if timeout is not None else 120.0)
        return reader.read(timeout=timeout, wake_fd=wake_fd, spin_s=spin_s)

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        if self.ready is None:
            start = time.monotonic()
            try:
                reader = self.connect(timeout)
                msg = reader.read(timeout=max(0.1, timeout - (time.monotonic() - start)))
            except SandboxStartError:
                self.kill()
                raise
            except Exception as exc:
                tail = self.log_tail()
                self.kill()
                raise SandboxStartError(f"the sandbox container's worker failed to start: {exc}. {tail}") from exc
            if msg is not None and msg.get("op") == "refused":
                self.kill()
                raise SandboxStartError(f"the sandbox refused to start: {str(msg.get('error'))[:1000]}")
            if msg is None or msg.get("op") != "ready":
                tail = self.log_tail()
                self.kill()
                raise SandboxStartError(f"the sandbox container's worker did not become ready. {tail}")
            self.ready = msg
        return self.ready

    def alive(self) -> bool:
        """Whether the container's process still runs (read from this host's /proc, not asked of the engine)."""
        return not self.dead and _alive(self.pid)

    # --- signals from the same host --------------------------------------------------------------------------
    def _signal(self, sig: int) -> None:
        if not self.dead:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def freeze(self) -> None:
        if not self.dead and not self.frozen:
            self._signal(signal.SIGSTOP)
            self.frozen = True
            self.frozen_at = time.monotonic()

    def thaw(self) -> None:
        if self.frozen and not self.dead:
            self.frozen = False
            self._signal(signal.SIGCONT)

    def interrupt(self) -> None:
        self._signal(signal.SIGINT)

    # --- end ------------------------------------------------------------------------------------------------
    def exit_description(self, wait_s: float = 0.0) -> str:
        if self._exit is not None:
            return self._exit
        deadline = time.monotonic() + wait_s
        while _alive(self.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        if _alive(self.pid):
            return "still running"
        try:
            while True:  # the init ends with its child; the engine records how (exit code, out of memory)
                self.container.reload()
                state = self.container.attrs["State"]
                if not state.get("Running") or time.monotonic() > deadline + 2:
                    break
                time.sleep(0.02)
        except Exception as exc:
            self._exit = (f"ended; the Docker Engine at {self.docker_host} could not say how "
                          f"({type(exc).__name__}: {str(exc)[:120]})")
            return self._exit
        code = int(state.get("ExitCode", -1))
        if state.get("OOMKilled"):
            self._exit = "killed by the container's memory limit (out of memory: memory_limit_mb)"
        elif code > 128:
            try:
                name = signal.Signals(code - 128).name
            except ValueError:
                name = f"signal {code - 128}"
            self._exit = f"killed by {name}" + (" (the container was killed, or ran out of memory)"
                                                 if name == "SIGKILL" else "")
        else:
            self._exit = f"exited with code {code}"
        return self._exit

    def log_tail(self, chars: int = 400) -> str:
        """The log's last `chars`, for an error message. The log is in the temp folder the container's user owns,
        so its name may be anything by now (a FIFO would hold an open by name forever, a folder fails the read):
        opened without waiting or following, and read only if it is a regular file."""
        try:
            fd = os.open(self.log_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return ""
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return ""
            text = os.pread(fd, chars, max(0, st.st_size - chars)).decode("utf-8", "replace").strip()
        except OSError:
            return ""
        finally:
            os.close(fd)
        return f"Worker log: {text}" if text else ""

    def kill(self) -> None:
        """End the worker now (SIGKILL from this host, the daemon not needed) and close the channel."""
        if self.dead:
            return
        self.dead = True
        for pid in {self.pid, self.init_pid}:  # the init's end takes every process of the container with it
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for sock in (self.sock, self._listener):
            if sock is not None:
                sock.close()
        self.proc_stat.close()

    def shutdown(self) -> None:
        if not self.dead and self.ready is not None and self.sock is not None:
            try:
                self.send({"op": "exit"}, deadline_s=0.2)
            except (OSError, ChannelClosed):
                pass
        self.kill()

    def remove(self) -> str | None:
        """Remove the container (its process killed first); the reason when the engine could not."""
        self.kill()
        try:
            self.container.remove(force=True, v=True)
            return None
        except Exception as exc:
            return f"{type(exc).__name__}: {str(exc)[:200]}"


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return int(fh.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def _alive(pid: int) -> bool:
    """Whether the container's process still runs (a zombie counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False
