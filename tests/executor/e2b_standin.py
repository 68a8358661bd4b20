"""A loopback stand-in of E2B's service for the tests: its REST API (create, connect, timeout, pause, kill) and
each sandbox's envd (process start/stdin/signal, file stat/list/remove, /files upload and download, /health).

Why: E2B cannot be reached from these machines, so the backend's code is tested against this, talking through
the real `e2b` SDK pointed here by the SDK's own settings (`api_url` and `sandbox_url`: every sandbox's envd is
this same server, told apart by the `E2b-Sandbox-Id` header the SDK sends). What runs "in the sandbox" runs for
real: a local subprocess by default, or a Docker container standing in for the microVM
(`e2b_standin_docker.DockerRunner`). It records the requests made and the files sent, and can refuse creation
for quota, make a sandbox vanish (REST 404, envd 502 "was not found", its streams cut) or cut every open stream.
"""
from __future__ import annotations

import email.parser
import email.policy
import io
import json
import os
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from socketserver import ThreadingMixIn
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from tests.executor.e2b_standin_envd import RunningProcess, Services, applications

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
API_KEY = "e2b_standin_key"
ENVD_VERSION = "0.6.9"


class LocalRunner:
    """The sandbox's processes as subprocesses here: `python3` is this interpreter, the repository importable."""

    def start(self, sandbox: Sandbox, argv: list[str], env: dict[str, str], cwd: str) -> subprocess.Popen[bytes]:
        bindir = os.path.join(sandbox.root, ".bin")
        os.makedirs(bindir, exist_ok=True)
        link = os.path.join(bindir, "python3")
        if not os.path.lexists(link):
            os.symlink(sys.executable, link)
        full_env = {"PATH": f"{bindir}:/usr/bin:/bin", "PYTHONPATH": REPO, "HOME": sandbox.local("/home/user"),
                    "LANG": "C.UTF-8", **env}
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=sandbox.local(cwd), env=full_env, start_new_session=True)

    def kill(self, popen: subprocess.Popen[bytes]) -> None:
        if popen.poll() is None:
            os.killpg(popen.pid, signal.SIGKILL)

    def pause(self, popen: subprocess.Popen[bytes], paused: bool) -> None:
        if popen.poll() is None:
            os.killpg(popen.pid, signal.SIGSTOP if paused else signal.SIGCONT)


@dataclass
class Sandbox:
    """One stand-in sandbox: what it was created with, its folder on this machine, its processes."""

    id: str
    template: str
    body: dict[str, Any]
    access_token: str
    root: str
    runner: Any  # LocalRunner, or tests/executor/e2b_standin_docker.py's DockerRunner
    state: str = "running"  # running, paused, killed
    gone: bool = False
    processes: dict[int, RunningProcess] = field(default_factory=dict)
    commands: list[dict[str, Any]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    timeouts: list[int] = field(default_factory=list)

    def local(self, path: str) -> str:
        """The file on this machine for the sandbox's absolute `path` (never outside its root)."""
        norm = os.path.normpath("/" + path.lstrip("/"))
        return os.path.join(self.root, norm.lstrip("/"))

    def owner(self, username: str) -> tuple[int, int]:
        """The ids envd writes as: E2B's `user` is 1000 (the sandbox image's worker uid), `root` 0."""
        return (0, 0) if username == "root" else (1000, 1000)

    def make_folders(self, path: str, username: str) -> None:
        """The folders of `path` made as envd makes them: owned by the user the request names."""
        missing = []
        folder = path
        while not os.path.isdir(self.local(folder)):
            missing.append(folder)
            folder = os.path.dirname(folder)
        for folder in reversed(missing):
            os.mkdir(self.local(folder))
            os.chown(self.local(folder), *self.owner(username))

    def spawn(self, cmd: str, args: list[str], envs: dict[str, str], cwd: str | None, stdin: bool,
              user: str) -> RunningProcess:
        self.commands.append({"cmd": cmd, "args": args, "envs": envs, "cwd": cwd, "stdin": stdin, "user": user})
        argv = [cmd, *[a for a in args if a != "-l"]]  # a login shell would reset PATH here
        os.makedirs(self.local(cwd or "/home/user"), exist_ok=True)
        popen = self.runner.start(self, argv, envs, cwd or "/home/user")
        pid = 1000 + len(self.commands)
        proc = RunningProcess(pid, popen, self.runner)
        self.processes[pid] = proc
        return proc

    def process(self, pid: int) -> RunningProcess:
        from connectrpc.code import Code
        from connectrpc.errors import ConnectError

        proc = self.processes.get(pid)
        if proc is None:
            raise ConnectError(Code.NOT_FOUND, f"process {pid} not found")
        return proc

    def stop_all(self) -> None:
        for proc in self.processes.values():
            proc.kill()


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    """No access log; the connection's socket in the environ, so a stream can be cut as a network would."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def get_environ(self) -> dict[str, Any]:
        environ = super().get_environ()
        environ["standin.handler"] = self
        return environ

    def get_stderr(self) -> Any:
        return io.StringIO()  # a cut stream's write errors are expected


class E2BStandIn:
    """The service on 127.0.0.1:`port`. `requests`: (method, path, json body or None, headers) of every REST and
    envd HTTP call; `files_sent`: (sandbox id, path, bytes) of every upload. Failures to inject: `refuse_create`
    (HTTP status of the next creations), `vanish(id)`, `cut_streams()`."""

    def __init__(self, runner: Any = None) -> None:
        self.runner = runner or LocalRunner()
        self.sandboxes: dict[str, Sandbox] = {}
        self.requests: list[tuple[str, str, Any, dict[str, str]]] = []
        self.files_sent: list[tuple[str, str, bytes]] = []
        self.refuse_create: int | None = None
        self.fan_out = False  # a Connect forks a process's output to one more stream, as envd does (not: takes it)
        self.streams_cut = False
        self._tmp = tempfile.mkdtemp(prefix="e2b-standin-")
        self._lock = threading.Lock()
        self._local = threading.local()
        self._envd = applications(Services(self))
        self._server = make_server("127.0.0.1", 0, self._app, server_class=_Server, handler_class=_Quiet)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def settings(self, **changes: Any) -> Any:
        """`E2BSettings` pointing the SDK here (its own `api_url`/`sandbox_url` options)."""
        from agents.executor.e2b.settings import E2BSettings

        values: dict[str, Any] = {"template": "agentdeck-test", "api_key": API_KEY, "api_url": self.url,
                                  "sandbox_url": self.url, "timeout_s": 600, "request_timeout_s": 10}
        values.update(changes)
        return E2BSettings(**values)

    def close(self) -> None:
        for sandbox in list(self.sandboxes.values()):
            sandbox.stop_all()
        self._server.shutdown()
        self._server.server_close()
        shutil.rmtree(self._tmp, ignore_errors=True)

    # --- failures ---------------------------------------------------------------------------------------------
    def vanish(self, sandbox_id: str) -> None:
        """The sandbox is gone at the service (its processes killed, its streams cut, every call refused)."""
        sandbox = self.sandboxes[sandbox_id]
        sandbox.gone = True
        sandbox.state = "killed"
        sandbox.stop_all()

    def cut_streams(self) -> None:
        """Every open command stream is dropped now (the connection to E2B cut); the processes keep running."""
        self.streams_cut = True
        for sandbox in self.sandboxes.values():
            for proc in sandbox.processes.values():
                for follower in proc.followers:
                    follower.put(None)

    def reset_connection(self) -> None:
        """Drop the connection of the request this thread serves with a TCP reset (what a lost network gives)."""
        handler = getattr(self._local, "handler", None)
        if handler is not None:
            handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            handler.rfile.close()  # its reference would keep the socket open past close()
            handler.connection.close()

    def live(self) -> list[str]:
        return [s.id for s in self.sandboxes.values() if s.state != "killed"]

    def calls(self, method: str, prefix: str) -> list[tuple[str, str, Any, dict[str, str]]]:
        return [r for r in self.requests if r[0] == method and r[1].startswith(prefix)]

    # --- HTTP ---------------------------------------------------------------------------------------------------
    def _app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
        for prefix, app in self._envd.items():
            if path.startswith(prefix):
                self.requests.append(("POST", path, None, headers))
                if (reply := self._envd_refusal(headers)) is not None:
                    return _reply(start_response, *reply)
                # The body whole, so reading it to its end never waits on the open connection (wsgiref gives
                # the socket itself, and does not decode the chunked bodies the SDK streams requests with).
                if environ.get("HTTP_TRANSFER_ENCODING", "").lower() == "chunked":
                    body = _dechunk(environ["wsgi.input"])
                else:
                    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
                environ["wsgi.input"] = io.BytesIO(body)
                environ["CONTENT_LENGTH"] = str(len(body))
                self._local.handler = environ["standin.handler"]
                result: Iterable[bytes] = app(environ, start_response)
                return result
        method = environ["REQUEST_METHOD"]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
        parsed = json.loads(body) if body and environ.get("CONTENT_TYPE", "").startswith("application/json") else None
        self.requests.append((method, path, parsed, headers))
        if path in ("/health", "/files"):
            if (reply := self._envd_refusal(headers)) is not None:
                return _reply(start_response, *reply)
            sandbox = self.sandboxes[headers["e2b-sandbox-id"]]
            if path == "/health":
                return _reply(start_response, 204, None)
            return self._files(sandbox, method, query, environ, body, start_response)
        if headers.get("x-api-key") != API_KEY:
            return _reply(start_response, 401, {"code": 401, "message": "Invalid API key"})
        return _reply(start_response, *self._rest(method, path.strip("/").split("/"), parsed or {}))

    def envd_sandbox(self, headers: Any) -> Sandbox:
        return self.sandboxes[headers.get("e2b-sandbox-id")]

    def _envd_refusal(self, headers: dict[str, str]) -> tuple[int, Any] | None:
        """What E2B's edge answers for a sandbox that is not there (or a request without its token)."""
        sandbox = self.sandboxes.get(headers.get("e2b-sandbox-id", ""))
        if sandbox is None or sandbox.gone or sandbox.state == "killed":
            return 502, {"code": 502, "message": f"The sandbox {headers.get('e2b-sandbox-id')} was not found"}
        if headers.get("x-access-token") != sandbox.access_token:
            return 401, {"code": 401, "message": "invalid access token"}
        return None

    def _files(self, sandbox: Sandbox, method: str, query: dict[str, str], environ: dict[str, Any], body: bytes,
               start_response: Callable[..., Any]) -> Iterable[bytes]:
        local = sandbox.local(query.get("path", ""))
        if method == "GET":
            if not os.path.isfile(local):
                return _reply(start_response, 404, {"code": 404, "message": f"{query.get('path')} not found"})
            with open(local, "rb") as fh:
                data = fh.read()
            start_response("200 OK", [("Content-Type", "application/octet-stream"),
                                      ("Content-Length", str(len(data)))])
            return [data]
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + environ["CONTENT_TYPE"].encode() + b"\r\n\r\n" + body)
        written = []
        for part in message.iter_parts():
            path = query.get("path") or part.get_filename()
            data = part.get_payload(decode=True) or b""
            target = sandbox.local(path)
            sandbox.make_folders(os.path.dirname(path), query.get("username", "user"))
            with open(target, "wb") as fh:
                fh.write(data)
            os.chown(target, *sandbox.owner(query.get("username", "user")))
            self.files_sent.append((sandbox.id, path, data))
            written.append({"name": os.path.basename(path), "type": "file", "path": path})
        return _reply(start_response, 200, written)

    def _rest(self, method: str, parts: list[str], body: dict[str, Any]) -> tuple[int, Any]:
        if method == "POST" and parts == ["v2", "sandboxes"]:
            if self.refuse_create is not None:
                return self.refuse_create, {"code": self.refuse_create,
                                            "message": "You have reached the maximum number of concurrent sandboxes"}
            return 201, self._create(body)
        sandbox_id = parts[2] if parts[:2] == ["v2", "sandboxes"] else parts[1] if len(parts) > 1 else ""
        sandbox = self.sandboxes.get(sandbox_id)
        if sandbox is None or sandbox.state == "killed":
            return 404, {"code": 404, "message": f"sandbox {sandbox_id} not found"}
        action = parts[-1] if len(parts) > 2 else ""
        if method == "DELETE":
            sandbox.state = "killed"
            sandbox.stop_all()
            return 204, None
        if action == "timeout":
            sandbox.timeouts.append(int(body.get("timeout", 0)))
            return 204, None
        if action == "pause":
            if sandbox.state == "paused":
                return 409, {"code": 409, "message": "already paused"}
            sandbox.state = "paused"
            for proc in sandbox.processes.values():
                self.runner.pause(proc.popen, True)
            return 204, None
        if method == "GET" and action == "":  # the SDK's get_info: read without resuming
            return 200, {**self._description(sandbox), "metadata": sandbox.body.get("metadata") or {},
                         "state": sandbox.state, "startedAt": "2026-01-01T00:00:00Z",
                         "endAt": "2026-01-02T00:00:00Z", "cpuCount": 1, "memoryMB": 512, "diskSizeMB": 1024}
        if action == "connect":
            status = 201 if sandbox.state == "paused" else 200
            if sandbox.state == "paused":
                for proc in sandbox.processes.values():
                    self.runner.pause(proc.popen, False)
                sandbox.state = "running"
            return status, self._description(sandbox)
        return 404, {"code": 404, "message": f"no such call {method} /{'/'.join(parts)}"}

    def _create(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            sandbox_id = f"sbx{len(self.sandboxes) + 1}{secrets.token_hex(4)}"
            root = os.path.join(self._tmp, sandbox_id)
            os.makedirs(os.path.join(root, "home", "user"))
            os.makedirs(os.path.join(root, "root"), mode=0o700)
            os.chown(os.path.join(root, "home", "user"), 1000, 1000)
            sandbox = Sandbox(id=sandbox_id, template=body.get("templateID", ""), body=body,
                              access_token=secrets.token_hex(8), root=root, runner=self.runner)
            self.sandboxes[sandbox_id] = sandbox
        return self._description(sandbox)

    def _description(self, sandbox: Sandbox) -> dict[str, Any]:
        return {"templateID": sandbox.template, "sandboxID": sandbox.id, "clientID": "standin",
                "envdVersion": ENVD_VERSION, "envdAccessToken": sandbox.access_token, "domain": None}


def _dechunk(stream: Any) -> bytes:
    """A chunked request body, whole (the SDK streams a server-stream call's one request that way)."""
    body = bytearray()
    while True:
        size = int(stream.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while stream.readline() not in (b"\r\n", b"\n", b""):
                pass
            return bytes(body)
        body += stream.read(size)
        stream.readline()


def _reply(start_response: Callable[..., Any], status: int, payload: Any) -> list[bytes]:
    reasons = {200: "OK", 201: "Created", 204: "No Content", 401: "Unauthorized", 404: "Not Found",
               409: "Conflict", 429: "Too Many Requests", 502: "Bad Gateway"}
    data = b"" if payload is None else json.dumps(payload).encode()
    headers = [("Content-Length", str(len(data)))]
    if payload is not None:
        headers.append(("Content-Type", "application/json"))
    start_response(f"{status} {reasons.get(status, 'Error')}", headers)
    return [data]
