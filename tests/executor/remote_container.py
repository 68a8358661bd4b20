"""A Docker container standing in for a remote sandbox (a pod, a microVM), for tests of the remote backends.

Why: no sandbox service or cluster can be reached from these machines, but the part that runs inside one (the
supervisor and the worker, `agents/executor/remote/`) must be tested for real. A container of the private
Docker daemon (`make docker-up`) with the project's sandbox image plays the sandbox: no network, read-only root,
every capability dropped but the supervisor's (`SUPERVISOR_CAPABILITIES`), no new privileges, a size-limited
tmpfs for temp files and a volume for the workspace. What a service would give:

- `ContainerStream`: the supervisor's stdin/stdout through the engine's attach socket, as a `ByteStream`;
- `ContainerFiles`: the workspace through the engine's archive API (`put_archive`/`get_archive`) and short
  `exec`s as the worker's user (list, remove), as `RemoteFiles`, standing in for a service's file API;
- `start_sandbox_container(...)`: both, for any command (the other remote backends' tests can run their
  stand-ins' "sandbox processes" here);
- `SupervisedDockerBackend`: a `SandboxBackend` made of the three, `SupervisedHost` on top (the name
  `supervised-docker`; `conftest.py` registers it when `AGENTDECK_TEST_BACKENDS` names it).
"""

from __future__ import annotations

import io
import json
import os
import secrets
import select
import socket
import struct
import tarfile
import time
from typing import Any

from agents.executor.backend import FileInfo, FileTooLarge, SandboxSpec
from agents.executor.docker import daemon, image
from agents.executor.docker.container import LABEL
from agents.executor.docker.host import APP_ID, APP_LABEL
from agents.executor.remote import SUPERVISOR_CAPABILITIES, WORKER_UID, StreamClosed, SupervisedHost
from agents.executor.remote.host import CAPABILITIES
from agents.executor.remote.interface import supervisor_command

WORKDIR = "/workspace"
PYTHON = "/usr/local/bin/python3"
_image_tag: str | None = None
_tree: image.RootTree | None = None


class ContainerStream:
    """A `ByteStream` over a container's attach socket (stdin in; stdout out, in the engine's 8-byte-header
    frames, which are undone here)."""

    def __init__(self, sock: Any) -> None:
        self._raw: socket.socket = getattr(sock, "_sock", sock)
        self._holder = sock  # the SDK's wrapper keeps the response (and the socket) alive
        self._head = b""
        self._left = 0  # payload bytes of the current engine frame still to come
        self._stdout = True
        self._closed = False

    def write(self, data: bytes, timeout: float) -> None:
        if self._closed:
            raise StreamClosed("the container's stream is closed")
        self._raw.settimeout(timeout)
        try:
            self._raw.sendall(data)
        finally:
            self._raw.settimeout(None)

    def read(self, max_bytes: int, timeout: float) -> bytes | None:
        deadline = time.monotonic() + timeout
        while True:
            if self._closed:
                return b""
            if not select.select([self._raw], [], [], max(0.0, deadline - time.monotonic()))[0]:
                return None
            if self._left == 0:
                chunk = self._raw.recv(8 - len(self._head))
                if not chunk:
                    return b""
                self._head += chunk
                if len(self._head) < 8:
                    continue
                kind, size = struct.unpack(">BxxxI", self._head)
                self._head, self._left, self._stdout = b"", size, kind == 1
                continue
            data = self._raw.recv(min(max_bytes, self._left))
            if not data:
                return b""
            self._left -= len(data)
            if self._stdout:
                return data

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for action in (lambda: self._raw.shutdown(socket.SHUT_RDWR), self._raw.close, self._holder.close):
            try:
                action()
            except Exception:
                pass


LIST = """
import json,os,stat,sys
root,cap=sys.argv[1],int(sys.argv[2]);out={}
for d,dirs,files in os.walk(root):
    for n in files+dirs:
        p=os.path.join(d,n)
        try:
            st=os.lstat(p)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out[os.path.relpath(p,root)]=[st.st_size,st.st_mtime_ns]
            if len(out)>cap: print('"over"');sys.exit(0)
print(json.dumps(out))
"""
REMOVE = "import os,stat,sys;p=sys.argv[1];st=os.lstat(p);os.unlink(p) if not stat.S_ISDIR(st.st_mode) else sys.exit(3)"


class ContainerFiles:
    """A `RemoteFiles` over the engine's archive API and short execs as the worker's user (a service's file API)."""

    def __init__(self, container: Any, root: str = WORKDIR, uid: int = WORKER_UID) -> None:
        self.container, self.root, self.uid = container, root, uid

    def put(self, relpath: str, data: bytes, max_bytes: int) -> None:
        if len(data) > max_bytes:
            raise FileTooLarge(f"{len(data):,} bytes, over the cap of {max_bytes:,}")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            parts = relpath.split("/")
            for i in range(1, len(parts)):
                info = tarfile.TarInfo("/".join(parts[:i]))
                info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, 0o755, self.uid, self.uid
                tar.addfile(info)
            info = tarfile.TarInfo(relpath)
            info.size, info.mode, info.uid, info.gid, info.mtime = len(data), 0o644, self.uid, self.uid, time.time()
            tar.addfile(info, io.BytesIO(data))
        if not self.container.put_archive(self.root, buf.getvalue()):
            raise OSError(f"the engine refused to write {relpath!r}")

    def get(self, relpath: str, max_bytes: int) -> bytes:
        import docker.errors  # type: ignore[import-untyped]

        try:
            stream, st = self.container.get_archive(f"{self.root}/{relpath}")
        except docker.errors.NotFound:
            raise FileNotFoundError(relpath) from None
        if st.get("linkTarget") or int(st.get("mode", 0)) & (0xFFF << 20 | 1 << 31):
            raise PermissionError(f"{relpath!r} is not a regular file")
        if int(st.get("size", 0)) > max_bytes:
            raise FileTooLarge(f"{relpath!r} is over the cap of {max_bytes:,} bytes")
        raw = bytearray()
        for chunk in stream:
            raw += chunk
            if len(raw) > max_bytes + 64 * 1024:
                raise FileTooLarge(f"{relpath!r} is over the cap of {max_bytes:,} bytes")
        with tarfile.open(fileobj=io.BytesIO(bytes(raw))) as tar:
            member = tar.next()
            if member is None or not member.isreg():
                raise PermissionError(f"{relpath!r} is not a regular file")
            fh = tar.extractfile(member)
            return b"" if fh is None else fh.read(max_bytes + 1)

    def _exec(self, *args: str) -> tuple[int, bytes]:
        code, out = self.container.exec_run([PYTHON, "-I", "-S", "-B", "-c", *args], user=f"{self.uid}:{self.uid}")
        return int(code), bytes(out)

    def list(self, max_entries: int) -> dict[str, FileInfo]:
        code, out = self._exec(LIST, self.root, str(max_entries))
        found = json.loads(out) if code == 0 else None
        if found == "over":
            raise OverflowError(f"more than {max_entries:,} files")
        if not isinstance(found, dict):
            raise OSError(f"the listing failed: {out[-200:]!r}")
        return {rel: FileInfo(int(v[0]), int(v[1])) for rel, v in found.items()}

    def remove(self, relpath: str) -> None:
        code, out = self._exec(REMOVE, f"{self.root}/{relpath}")
        if code != 0:
            raise FileNotFoundError(relpath) if b"FileNotFoundError" in out else PermissionError(relpath)


def sandbox_image(client: Any) -> str:
    """The project's sandbox image (built from this machine's files, no registry). Looked up on every start: other
    worktrees sharing the daemon build their own and remove earlier tags not in use (`image.remove_stale`)."""
    global _image_tag, _tree
    if _image_tag is not None:
        try:
            client.images.get(_image_tag)
            return _image_tag
        except Exception:
            pass
    if _tree is None:
        _tree = image.assemble()
    _image_tag = image.ensure_image(client, _tree)
    return _image_tag


def start_sandbox_container(client: Any, command: list[str], *, memory_mb: int = 2048, tmp_mb: int = 512,
                            cap_add: tuple[str, ...] = SUPERVISOR_CAPABILITIES) -> tuple[Any, ContainerStream,
                                                                                          ContainerFiles]:
    """A started container of the sandbox image running `command` (uid 0 with only `cap_add`), attached."""
    from docker.types import Mount  # type: ignore[import-untyped]

    api = client.api
    host_config = api.create_host_config(
        network_mode="none", read_only=True, cap_drop=["ALL"], cap_add=list(cap_add),
        security_opt=["no-new-privileges", "seccomp=unconfined"], pids_limit=100, mem_limit=f"{memory_mb}m",
        memswap_limit=f"{memory_mb}m", init=True, tmpfs={"/tmp": f"size={tmp_mb}m,mode=1777"},
        mounts=[Mount(WORKDIR, None, type="volume")], log_config={"type": "none", "config": {}})
    # stdin_open without detach sets StdinOnce: the supervisor's stdin ends when the attach stream is closed.
    created = api.create_container(
        sandbox_image(client), command, user="0:0", working_dir="/opt/agentdeck", stdin_open=True, tty=False,
        host_config=host_config, labels={LABEL: "1", APP_LABEL: APP_ID},
        name=f"agentdeck-remote-{secrets.token_hex(6)}")
    container = client.containers.get(created["Id"])
    try:
        sock = client.api.attach_socket(container.id, params={"stdin": 1, "stdout": 1, "stream": 1})
        container.start()
    except BaseException:
        container.remove(force=True, v=True)
        raise
    return container, ContainerStream(sock), ContainerFiles(container)


class SupervisedDockerBackend:
    """Remote sandboxes played by local containers: the supervisor over the attach stream, files by archive."""

    name = "supervised-docker"
    capabilities = CAPABILITIES

    def __init__(self) -> None:
        self._client: Any = None
        self.containers: list[Any] = []  # every container it started (tests check they are gone)

    def unavailable_reason(self) -> str | None:
        return daemon.reachable()

    def client(self) -> Any:
        if self._client is None:
            self._client = daemon.connect()
        return self._client

    def start(self, spec: SandboxSpec) -> SupervisedHost:
        client = self.client()
        command = supervisor_command(workdir=WORKDIR, sys_path=image.site_packages_paths())
        container, stream, files = start_sandbox_container(client, command,
                                                           memory_mb=spec.limits.memory_limit_mb + 512)
        self.containers.append(container)

        def remove() -> None:
            try:
                container.remove(force=True, v=True)
            except Exception:
                pass

        return SupervisedHost(stream, files, host_id=container.id[:12], on_close=remove, spec=spec)

    def attach(self, host_id: str) -> SupervisedHost:
        from agents.executor.errors import SandboxError

        raise SandboxError("the supervised Docker stand-in cannot reattach a sandbox")


def docker_ready() -> str | None:
    """None when the private daemon answers (the tests that need it skip with this reason otherwise)."""
    if not os.environ.get("DOCKER_HOST") and not os.path.exists(daemon.private_socket()):
        return "no Docker daemon (make docker-up)"
    return daemon.reachable()
