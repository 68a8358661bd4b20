"""The workspace's files in a pod, by exec: Kubernetes has no file API (the E2B backend has one), so each file
operation is one exec of a small standard-library script in the pod (`pod_files_script.py`) whose stdin or
stdout carries the file, with the size cap enforced on both sides.

Why the app re-checks everything: the script runs in the sandbox, next to the code it holds, so its answers are
the attacker's: a `get` reads at most the cap plus one byte and refuses more; a listing is read to a byte bound,
parsed as JSON of the expected shape and its paths checked (relative, no `..`); an exit code outside the
script's own set is an error, never a success.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Sequence
from importlib.resources import files as package_files
from pathlib import PurePosixPath

from ..artifacts import MAX_ENTRIES
from ..backend import FILE_MAX_BYTES, FileInfo, FileTooLarge
from ..errors import SandboxError
from .exec_stream import ExecStream

LIST_MAX_BYTES = 8 * 1024 * 1024  # a listing of MAX_ENTRIES paths fits well within this
SCRIPT = (package_files(__package__) / "pod_files_script.py").read_text()
Exec = Callable[[Sequence[str]], ExecStream]


def check_relpath(relpath: str) -> str:
    """A workspace path the app may ask for: relative, POSIX, without `.`/`..` parts or NUL; else
    PermissionError (the script refuses the same, this is the app's own first check)."""
    path = PurePosixPath(relpath)
    if not relpath or "\x00" in relpath or path.is_absolute() or any(p in ("..", ".") for p in relpath.split("/")) \
            or str(path) != relpath:
        raise PermissionError(f"not a path inside the workspace: {relpath[:200]!r}")
    return relpath


class ExecFiles:
    """`remote.RemoteFiles` on a pod's workspace folder (`workdir`), each operation one exec through `run`.
    `owner`: the user id the script switches to when the exec starts as root (the worker's: the workspace is
    its, and what the app puts must be the worker's to change); -1: it stays who the exec made it."""

    def __init__(self, run: Exec, python: str, workdir: str, owner: int = -1, timeout_s: float = 60.0) -> None:
        self._run = run
        self._python = python
        self._workdir = workdir
        self._owner = owner
        self._timeout_s = timeout_s

    def _call(self, args: Sequence[str], stdin: bytes = b"", max_out: int = 0) -> bytes:
        """Run the script with `args`; returns its stdout (at most `max_out` + 1 bytes read). Raises by its
        exit code."""
        stream = self._run([self._python, "-I", "-S", "-c", SCRIPT, self._workdir, *args, str(self._owner)])
        try:
            sock = stream.sock
            sock.settimeout(self._timeout_s)
            if stdin:
                sock.sendall(stdin)
            sock.shutdown(socket.SHUT_WR)
            out = bytearray()
            while len(out) <= max_out:
                chunk = sock.recv(min(65536, max_out + 1 - len(out)) or 1)
                if not chunk:
                    break
                out += chunk
            ended = stream.wait_ended(self._timeout_s) if len(out) <= max_out else None
        except (OSError, TimeoutError) as exc:
            raise SandboxError(f"a file operation in the pod failed: {type(exc).__name__}: {exc}") from exc
        finally:
            stream.close()
        if len(out) > max_out:
            raise FileTooLarge(f"the pod sent more than {max_out} bytes")
        code, how = ended if ended is not None else (None, "did not end")
        message = stream.stderr_tail()[:300]
        if code == 0:
            return bytes(out)
        if code == 2:
            raise FileNotFoundError(message or "no such file")
        if code == 3:
            raise PermissionError(message or "refused")
        if code == 4:
            raise FileTooLarge(message or "over the cap")
        if code == 5:
            raise FileExistsError(message or "exists")
        raise SandboxError(f"a file operation in the pod {how}: {message}")

    def list(self, max_entries: int = MAX_ENTRIES) -> dict[str, FileInfo]:
        """Regular files by relative path; `OverflowError` when there are more than `max_entries`."""
        raw = self._call(["list", str(max_entries)], max_out=LIST_MAX_BYTES)
        try:
            found = json.loads(raw)
        except ValueError as exc:
            raise SandboxError("the pod's file listing is not JSON") from exc
        if not isinstance(found, dict):
            raise SandboxError("the pod's file listing has the wrong shape")
        if len(found) > max_entries:
            raise OverflowError(f"the workspace holds more than {max_entries} files")
        out: dict[str, FileInfo] = {}
        for path, info in found.items():
            try:
                check_relpath(path)
            except PermissionError:
                continue
            if isinstance(info, list) and len(info) == 2 and all(type(v) is int and v >= 0 for v in info):
                out[path] = FileInfo(size=info[0], mtime_ns=info[1])
        return out

    def get(self, relpath: str, max_bytes: int = FILE_MAX_BYTES) -> bytes:
        return self._call(["get", check_relpath(relpath), str(max_bytes)], max_out=max_bytes)

    def put(self, relpath: str, data: bytes, max_bytes: int = FILE_MAX_BYTES, exclusive: bool = False) -> None:
        check_relpath(relpath)
        if len(data) > max_bytes:
            raise FileTooLarge(f"{relpath}: {len(data)} bytes is over the cap of {max_bytes}")
        self._call(["put", relpath, str(max_bytes), "1" if exclusive else "0"], stdin=data)

    def remove(self, relpath: str) -> None:
        self._call(["remove", check_relpath(relpath)])

