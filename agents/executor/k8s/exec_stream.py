"""A process started in a pod by the Kubernetes exec API, as one plain two-way byte stream (a local socket).

Why a socket pair with two pump threads: the kubernetes client's exec stream (`kubernetes.stream.stream`, a
websocket speaking the v5/v4 channel.k8s.io protocol: stdin is channel 0, stdout 1, stderr 2, the exit status 3)
is read by polling one frame at a time, not by a file descriptor the app can wait on together with its wake pipe.
The pumps move stdout into one end of a socket pair and that end's input to stdin; the app gets the other end, a
real descriptor with the kernel's buffering and back-pressure (the down pump blocks while the app does not read,
so a pod that floods its stdout costs at most the socket's buffer). Stderr is kept, capped, for error messages.
Everything received is bytes the app will check frame by frame: nothing here interprets it.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import stream as k8s_stream

from ..errors import SandboxStartError

STDIN, STDOUT, STDERR, ERROR = 0, 1, 2, 3
STDERR_KEEP = 16 * 1024  # the tail of stderr kept for messages
POLL_S = 0.25  # how often the down pump looks at `closing` while the pod is silent


def exit_of(status_text: str) -> tuple[int | None, str]:
    """The exit code and message in the error channel's Status (`{"status": "Success"}` or a Failure whose
    `details.causes` holds `ExitCode`); (None, message) for anything else."""
    try:
        status = json.loads(status_text)
    except ValueError:
        return None, status_text[:200]
    if not isinstance(status, dict):
        return None, status_text[:200]
    if status.get("status") == "Success":
        return 0, "exited with code 0"
    message = str(status.get("message") or "")[:200]
    details = status.get("details")
    causes = details.get("causes") if isinstance(details, dict) else None
    for cause in causes or ():
        if isinstance(cause, dict) and cause.get("reason") == "ExitCode":
            try:
                code = int(cause.get("message", ""))
            except (TypeError, ValueError):
                break
            return code, f"exited with code {code}"
    return None, message or "ended with an unknown status"


class ExecStream:
    """One exec'd process: `sock` is the app's end (read its stdout, write its stdin; EOF when it ended or the
    stream was cut), also offered as `remote.ByteStream` (`read`, `write`, `close`). `ended()` says how it ended
    once it has. Thread-safe `close()`."""

    def __init__(self, ws: Any, what: str) -> None:
        self._ws = ws
        self.what = what
        self.sock, self._inner = socket.socketpair()
        self._stderr = bytearray()
        self._lock = threading.Lock()
        self._closing = False
        self._status: tuple[int | None, str] | None = None
        self._down = threading.Thread(target=self._pump_down, name=f"k8s-exec-down {what}", daemon=True)
        self._up = threading.Thread(target=self._pump_up, name=f"k8s-exec-up {what}", daemon=True)
        self._down.start()
        self._up.start()

    # --- the pumps -------------------------------------------------------------------------------------------
    def _pump_down(self) -> None:
        how: tuple[int | None, str] = (None, "the exec stream was cut")
        try:
            while self._ws.is_open() and not self._closing:
                self._ws.update(timeout=POLL_S)
                out = self._ws.read_channel(STDOUT)
                if out:
                    self._inner.sendall(out)
                err = self._ws.read_channel(STDERR)
                if err:
                    with self._lock:
                        self._stderr += err
                        del self._stderr[:-STDERR_KEEP]
            status = self._ws.read_channel(ERROR)
            if status:
                text = status.decode("utf-8", "replace") if isinstance(status, bytes) else str(status)
                how = exit_of(text)
            elif self._closing:
                how = (None, "closed by the app")
        except Exception as exc:  # the websocket library raises its own types (connection closed, OS errors)
            how = (None, f"the exec stream was cut ({type(exc).__name__})")
        finally:
            with self._lock:
                if self._status is None:
                    self._status = how
            try:
                self._inner.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._inner.close()

    def _pump_up(self) -> None:
        try:
            while True:
                data = self._inner.recv(64 * 1024)
                if not data:
                    self._ws.close_channel(STDIN)  # v5: the process sees EOF on stdin
                    return
                self._ws.write_stdin(data)
        except Exception:
            return

    # --- the app's side ------------------------------------------------------------------------------------
    def ended(self) -> tuple[int | None, str] | None:
        """(exit code or None, how) once the process ended or the stream was cut; None while it runs."""
        with self._lock:
            return self._status

    def stderr_tail(self) -> str:
        with self._lock:
            return bytes(self._stderr).decode("utf-8", "replace")

    def wait_ended(self, timeout: float) -> tuple[int | None, str] | None:
        self._down.join(timeout)
        return self.ended()

    def _wait(self, events: int, timeout: float) -> bool:
        if self.sock.fileno() < 0:
            raise BrokenPipeError(f"the exec stream to {self.what} is closed")
        poller = select.poll()
        poller.register(self.sock, events)
        return bool(poller.poll(max(0.0, timeout) * 1000))

    def write(self, data: bytes, timeout: float) -> None:
        """All of `data` to the process's stdin within `timeout` seconds, else `TimeoutError`; `OSError` once
        the stream is cut."""
        deadline = time.monotonic() + timeout
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"the pod {self.what} did not take its input within {timeout:g} s")
            if self._wait(select.POLLOUT, remaining):
                try:
                    view = view[self.sock.send(view, socket.MSG_DONTWAIT):]
                except BlockingIOError:
                    continue

    def read(self, max_bytes: int, timeout: float) -> bytes | None:
        """Up to `max_bytes` of the process's stdout as soon as some are there; None after `timeout` seconds of
        silence; b"" once it ended or the stream was cut."""
        try:
            if not self._wait(select.POLLIN, timeout):
                return None
        except (BrokenPipeError, ValueError):
            return b""
        try:
            return self.sock.recv(max_bytes, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return None
        except OSError:
            if self._closing:  # closed by another thread between the wait and the read
                return b""
            raise

    def close(self) -> None:
        """End the stream (the pod's process gets EOF and the connection closes); idempotent, any thread: a
        `read` waiting in another thread returns b"" (the socket is shut down before it is closed)."""
        self._closing = True
        try:
            self._ws.close()
        except Exception:  # the websocket library's own errors on an already-broken connection
            pass
        for step in (self._shutdown, self.sock.close):
            try:
                step()
            except OSError:
                pass

    def _shutdown(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)


def open_exec(make_api: Callable[[], client.ApiClient], namespace: str, pod: str, container: str,
              command: Sequence[str], timeout_s: float) -> ExecStream:
    """Start `command` in the pod's container with stdin and stdout attached (no tty), as an `ExecStream`.

    `make_api` gives a fresh ApiClient: `kubernetes.stream.stream` swaps the client's request method while it
    connects, so a client shared with other threads' calls would send those calls over a websocket."""
    api = client.CoreV1Api(make_api())
    try:
        ws = k8s_stream(api.connect_get_namespaced_pod_exec, pod, namespace, container=container,
                        command=list(command), stdin=True, stdout=True, stderr=True, tty=False, binary=True,
                        _preload_content=False, _request_timeout=timeout_s)
    except Exception as exc:  # the client raises ApiException(status=0) for a refused websocket, and then an
        # AttributeError while decoding its empty body (kubernetes 36): the ApiException is its context
        cause = exc if isinstance(exc, ApiException) else exc.__context__
        reason = cause.reason if isinstance(cause, ApiException) else f"{type(exc).__name__}: {exc}"
        raise SandboxStartError(f"exec into the pod {pod} (container {container!r}, namespace {namespace!r}) was "
                                f"refused: {str(reason)[:300]}: the pod must exist and the app's service account "
                                f"needs create on pods/exec there (AGENTDECK_K8S_NAMESPACE, "
                                f"AGENTDECK_K8S_CONTAINER)") from exc
    return ExecStream(ws, f"{namespace}/{pod}")
