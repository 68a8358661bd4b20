"""The envd side of the E2B stand-in: the process and filesystem services a sandbox's envd answers over Connect.

Why the SDK's own generated server classes: `e2b.envd.*_connect` ships WSGI applications for the same protobuf
services its clients call, so the wire format (Connect JSON, server streams, errors) is the SDK's own and only
the behaviour here is ours. The sandbox's folders live under a temp folder on this machine; its processes run
through `Sandbox.runner` (a local subprocess, or a Docker container standing in for E2B's microVM).
"""
from __future__ import annotations

import os
import queue
import stat
import subprocess
import threading
from typing import TYPE_CHECKING, Any

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from e2b.envd.filesystem import filesystem_connect, filesystem_pb
from e2b.envd.process import process_connect, process_pb
from protobuf import Oneof
from protobuf.wkt.google.protobuf.timestamp_pb import Timestamp

if TYPE_CHECKING:
    from tests.executor.e2b_standin import E2BStandIn, Sandbox

Event = process_pb.ProcessEvent


class StreamCut(Exception):
    """Raised inside a response stream to drop the connection mid-stream (the server closes the socket)."""


class Services(process_connect.ProcessSync, filesystem_connect.FilesystemSync):
    """Both services, finding the sandbox of each request by the SDK's `E2b-Sandbox-Id` header."""

    def __init__(self, standin: E2BStandIn) -> None:
        self.standin = standin

    def _sandbox(self, ctx: Any) -> Sandbox:
        return self.standin.envd_sandbox(ctx.request_headers)

    # --- process.Process ------------------------------------------------------------------------------------
    def start(self, request: process_pb.StartRequest, ctx: Any) -> Any:
        sandbox = self._sandbox(ctx)
        config = request.process
        proc = sandbox.spawn(config.cmd, list(config.args), dict(config.envs),
                             config.cwd if config.has_field("cwd") else None, bool(request.stdin), user_of(ctx))
        return self._events(sandbox, proc, proc.first, process_pb.StartResponse)

    def connect(self, request: process_pb.ConnectRequest, ctx: Any) -> Any:
        sandbox = self._sandbox(ctx)
        proc = sandbox.process(request.process.selector.value)
        return self._events(sandbox, proc, proc.subscribe(self.standin.fan_out), process_pb.ConnectResponse)

    def list(self, request: process_pb.ListRequest, ctx: Any) -> process_pb.ListResponse:
        sandbox = self._sandbox(ctx)
        running = [process_pb.ProcessInfo(pid=pid, config=process_pb.ProcessConfig(
            cmd=sandbox.commands[pid - 1001]["cmd"], args=sandbox.commands[pid - 1001]["args"]))
            for pid, proc in sandbox.processes.items() if proc.popen.poll() is None]
        return process_pb.ListResponse(processes=running)

    def _events(self, sandbox: Sandbox, proc: RunningProcess, output: queue.Queue[tuple[str, bytes] | None],
                kind: Any) -> Any:
        yield kind(event=Event(event=Oneof("start", Event.StartEvent(pid=proc.pid))))
        while True:
            item = output.get()
            if item is None:
                break
            if sandbox.gone or self.standin.streams_cut or output not in proc.followers:
                self.standin.reset_connection()
                raise StreamCut("the stand-in cut the stream")
            name, data = item
            yield kind(event=Event(event=Oneof("data", Event.DataEvent(output=Oneof(name, data)))))
        if sandbox.gone or self.standin.streams_cut or output not in proc.followers:
            self.standin.reset_connection()
            raise StreamCut("the stand-in cut the stream")
        code = proc.popen.wait()
        yield kind(event=Event(event=Oneof(
            "end", Event.EndEvent(exit_code=code, exited=True, status=f"exit status {code}"))))

    def send_input(self, request: process_pb.SendInputRequest, ctx: Any) -> process_pb.SendInputResponse:
        proc = self._sandbox(ctx).process(request.process.selector.value)
        data = request.input.input.value
        proc.stdin_bytes += len(data)
        try:
            assert proc.popen.stdin is not None
            proc.popen.stdin.write(data)
            proc.popen.stdin.flush()
        except OSError as exc:
            raise ConnectError(Code.FAILED_PRECONDITION, f"stdin closed: {exc}") from exc
        return process_pb.SendInputResponse()

    def send_signal(self, request: process_pb.SendSignalRequest, ctx: Any) -> process_pb.SendSignalResponse:
        proc = self._sandbox(ctx).process(request.process.selector.value)
        proc.kill()
        return process_pb.SendSignalResponse()

    def close_stdin(self, request: process_pb.CloseStdinRequest, ctx: Any) -> process_pb.CloseStdinResponse:
        proc = self._sandbox(ctx).process(request.process.selector.value)
        if proc.popen.stdin is not None:
            proc.popen.stdin.close()
        return process_pb.CloseStdinResponse()

    # --- filesystem.Filesystem ------------------------------------------------------------------------------
    def stat(self, request: filesystem_pb.StatRequest, ctx: Any) -> filesystem_pb.StatResponse:
        sandbox = self._sandbox(ctx)
        return filesystem_pb.StatResponse(entry=entry_info(sandbox, request.path))

    def make_dir(self, request: filesystem_pb.MakeDirRequest, ctx: Any) -> filesystem_pb.MakeDirResponse:
        sandbox = self._sandbox(ctx)
        local = sandbox.local(request.path)
        if os.path.lexists(local):
            raise ConnectError(Code.ALREADY_EXISTS, f"{request.path} exists")
        sandbox.make_folders(request.path, user_of(ctx))
        return filesystem_pb.MakeDirResponse(entry=entry_info(sandbox, request.path))

    def list_dir(self, request: filesystem_pb.ListDirRequest, ctx: Any) -> filesystem_pb.ListDirResponse:
        sandbox = self._sandbox(ctx)
        entries: list[filesystem_pb.EntryInfo] = []

        def walk(path: str, depth: int) -> None:
            for name in sorted(os.listdir(sandbox.local(path))):
                child = f"{path.rstrip('/')}/{name}"
                entries.append(entry_info(sandbox, child))
                if depth > 1 and stat.S_ISDIR(os.lstat(sandbox.local(child)).st_mode):
                    walk(child, depth - 1)

        if not os.path.isdir(sandbox.local(request.path)):
            raise ConnectError(Code.NOT_FOUND, f"{request.path} is not a folder")
        walk(request.path, max(1, request.depth))
        return filesystem_pb.ListDirResponse(entries=entries)

    def remove(self, request: filesystem_pb.RemoveRequest, ctx: Any) -> filesystem_pb.RemoveResponse:
        sandbox = self._sandbox(ctx)
        local = sandbox.local(request.path)
        if not os.path.lexists(local):
            raise ConnectError(Code.NOT_FOUND, f"{request.path} not found")
        sandbox.removed.append(request.path)
        os.unlink(local)
        return filesystem_pb.RemoveResponse()


def user_of(ctx: Any) -> str:
    """The user an envd request acts as (the SDK's basic-auth header names it; E2B's default is `user`)."""
    import base64

    auth = ctx.request_headers.get("authorization", "")
    if auth.lower().startswith("basic "):
        return base64.b64decode(auth[6:]).decode("utf-8", "replace").split(":")[0] or "user"
    return "user"


def entry_info(sandbox: Sandbox, path: str) -> filesystem_pb.EntryInfo:
    """envd's entry for `path` (lstat: a link is reported as a link, with its target)."""
    local = sandbox.local(path)
    try:
        st = os.lstat(local)
    except FileNotFoundError as exc:
        raise ConnectError(Code.NOT_FOUND, f"{path} not found") from exc
    is_link = stat.S_ISLNK(st.st_mode)
    kind = (filesystem_pb.FileType.DIRECTORY if stat.S_ISDIR(st.st_mode) else
            filesystem_pb.FileType.FILE)
    fields: dict[str, Any] = {}
    if is_link:
        fields["symlink_target"] = os.readlink(local)
    return filesystem_pb.EntryInfo(
        name=os.path.basename(path), type=kind, path=path, size=st.st_size, mode=st.st_mode & 0o7777,
        permissions=stat.filemode(st.st_mode), owner="user", group="user", is_symlink=is_link,
        modified_time=Timestamp(seconds=int(st.st_mtime), nanos=st.st_mtime_ns % 1_000_000_000), **fields)


class RunningProcess:
    """A process of a stand-in sandbox: its stdout and stderr read into a queue of (stream, bytes) events for the
    stream that follows it; a later `Connect` takes the output over (the earlier stream is then cut), or with the
    stand-in's `fan_out` gets it too, the earlier streams going on (what E2B's envd does: each Connect forks the
    process's output to one more consumer)."""

    def __init__(self, pid: int, popen: subprocess.Popen[bytes], runner: Any) -> None:
        self.pid = pid
        self.popen = popen
        self.runner = runner
        self.stdin_bytes = 0
        self.first: queue.Queue[tuple[str, bytes] | None] = queue.Queue()
        self.current = self.first
        self.followers = [self.first]
        self._open = 2
        self._lock = threading.Lock()
        for name, pipe in (("stdout", popen.stdout), ("stderr", popen.stderr)):
            threading.Thread(target=self._read, args=(name, pipe), daemon=True).start()

    def _read(self, name: str, pipe: Any) -> None:
        while True:
            data = os.read(pipe.fileno(), 65536)
            if not data:
                break
            with self._lock:
                for follower in self.followers:
                    follower.put((name, data))
        with self._lock:
            self._open -= 1
            if self._open == 0:
                for follower in self.followers:
                    follower.put(None)

    def subscribe(self, fan_out: bool = False) -> queue.Queue[tuple[str, bytes] | None]:
        """A new queue that gets the output from now on; the previous followers' streams end (cut), or with
        `fan_out` go on getting it too."""
        with self._lock:
            self.current = queue.Queue()
            if not fan_out:
                for previous in self.followers:
                    previous.put(None)
                self.followers = []
            self.followers.append(self.current)
            if self._open == 0:
                self.current.put(None)
            return self.current

    def kill(self) -> None:
        self.runner.kill(self.popen)


def applications(services: Services) -> dict[str, Any]:
    """The two WSGI applications by their path prefix."""
    return {"/process.Process/": process_connect.ProcessWSGIApplication(services),
            "/filesystem.Filesystem/": filesystem_connect.FilesystemWSGIApplication(services)}
