"""One byte stream to the supervisor running in an E2B sandbox: a background command's stdin and stdout.

Why a pipe in the middle: the SDK delivers the command's output by iterating an HTTP stream in the calling thread,
while the app reads frames with a timeout and a wake-up descriptor (`SandboxHost.read`). A thread of ours iterates
the SDK's stream, decodes the relay's base64 lines (`relay.py`) and writes the bytes into a local pipe whose read
end is what the app waits on, so a wait can be cut short and a stalled stream never holds the app's thread.
Everything the sandbox sends is hostile: a line longer than `MAX_LINE` or not base64 ends the stream.
"""

from __future__ import annotations

import base64
import binascii
import os
import select
import threading
from collections.abc import Iterator
from typing import Any

from .errors import describe

MAX_LINE = 256 * 1024  # the relay sends at most 48 KiB a line (64 KiB of base64)
STDERR_TAIL = 4096  # what is kept of the command's stderr, for the message when it ends
READ_SLICE_S = 0.2  # the longest one `read` waits, so `close` from another thread is never held up for long


class StreamClosed(OSError):
    """The command's stream ended (it exited, the sandbox went away or the connection was cut)."""


class CommandStream:
    """A started command's two directions, as the remote package's `ByteStream`: `write` sends to its stdin,
    `read` gives its stdout's bytes, `close` kills it."""

    def __init__(self, sandbox: Any, handle: Any, settings_hint: str) -> None:
        self._sandbox = sandbox
        self._handle = handle
        self._hint = settings_hint
        self.pid: int = int(handle.pid)
        self._rfd, self._wfd = os.pipe()
        self._lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._closed = False
        self.ended: str | None = None  # why the output ended, once it has (None while it runs)
        self.exit_code: int | None = None
        self.stderr_tail = ""
        self._generation = 0  # which handle the pipe follows (`follow` moves to a new one)
        self._pausing = False  # a pause at the service will cut the current connection: its end is not ours
        self._end_while_pausing: str | None = None
        self._thread = self._start_pump()

    def _start_pump(self) -> threading.Thread:
        thread = threading.Thread(target=self._pump, args=(self._handle, self._generation),
                                  name=f"e2b-stream-{self.pid}", daemon=True)
        thread.start()
        return thread

    def begin_pause(self) -> None:
        """The sandbox is about to be paused, which ends the current connection at any moment from now: that end
        must not close the pipe (`follow` carries on after the resume), whether it comes before or after."""
        with self._lock:
            self._pausing = True
            self._end_while_pausing = None

    def pause_failed(self) -> None:
        """The pause did not happen: the current connection goes on, and an end it met meanwhile is the
        command's after all."""
        with self._lock:
            self._pausing = False
            why, self._end_while_pausing = self._end_while_pausing, None
            if why is not None and self.ended is None:
                self.ended = why
                os.close(self._wfd)

    def follow(self, handle: Any) -> None:
        """Go on with a new handle on the same command (the SDK's `commands.connect` after the sandbox was paused
        and resumed, which ends the old connection): the old handle's bytes and end are dropped from now on,
        the pipe the host reads stays the same."""
        with self._lock:
            if self.ended is not None:
                raise StreamClosed(self.why())
            self._generation += 1
            self._pausing = False
            self._end_while_pausing = None
            self._handle = handle
            self._thread = self._start_pump()

    # --- output ---------------------------------------------------------------------------------------------
    def read(self, max_bytes: int, timeout: float | None) -> bytes | None:
        """Up to `max_bytes` of the supervisor's output; None if `timeout` passed first. `StreamClosed` saying why
        once it ended (the supervisor exited, the sandbox is gone, the connection was cut) or was closed."""
        with self._read_lock:
            if self._closed:
                raise StreamClosed(self.ended or "the stream to the E2B sandbox was closed")
            ready, _, _ = select.select([self._rfd], [], [], READ_SLICE_S if timeout is None else
                                        min(timeout, READ_SLICE_S))
            if not ready:
                return None
            data = os.read(self._rfd, max_bytes)
        if not data:
            raise StreamClosed(self.why())
        return data

    def why(self) -> str:
        """How the stream ended, with the end of what the command printed on stderr (the sandbox's text: bounded,
        for the operator)."""
        why = self.ended or "the stream to the E2B sandbox ended"
        tail = self.stderr_tail.strip()[-1500:]
        return f"{why} (it printed: {tail})" if tail else why

    def _lines(self, handle: Any) -> Iterator[bytes]:
        pending = ""
        for stdout, stderr, _pty in handle:
            if stderr:
                self.stderr_tail = (self.stderr_tail + stderr)[-STDERR_TAIL:]
            if not stdout:
                continue
            pending += stdout
            *lines, pending = pending.split("\n")
            if len(pending) > MAX_LINE:
                raise StreamClosed(f"the sandbox sent a line over {MAX_LINE} bytes (not the relay's output)")
            for line in lines:
                try:
                    yield base64.b64decode(line.encode("ascii", "strict"), validate=True)
                except (UnicodeEncodeError, binascii.Error) as exc:
                    raise StreamClosed("the sandbox sent output that is not the relay's base64 lines") from exc

    def _pump(self, handle: Any, generation: int) -> None:
        why = "the supervisor exited"
        try:
            for data in self._lines(handle):
                if generation != self._generation:
                    return  # a newer handle follows the command
                view = memoryview(data)
                while view:
                    view = view[os.write(self._wfd, view):]
        except StreamClosed as exc:
            why = str(exc)
        except Exception as exc:  # the SDK's errors: sandbox gone, connection cut, timeout
            why = describe(exc, self._hint)
        else:
            code = self._exit_code(handle)
            if code is not None:
                self.exit_code = code
                why = f"the supervisor exited with code {code}"
        with self._lock:
            if generation != self._generation:
                return  # the old connection's end (a pause cut it): not the command's
            if self._pausing:
                self._end_while_pausing = why  # most likely the pause's cut: `follow` or `pause_failed` decides
                return
            self.ended = why
            os.close(self._wfd)

    @staticmethod
    def _exit_code(handle: Any) -> int | None:
        """The command's exit code from the stream's end event (the SDK's `wait` after the output is read)."""
        try:
            code = handle.wait().exit_code
        except Exception as exc:  # CommandExitException carries it; anything else: the stream ended without one
            code = getattr(exc, "exit_code", None)
        return code if isinstance(code, int) else None

    # --- input ----------------------------------------------------------------------------------------------
    def write(self, data: bytes, timeout: float) -> None:
        """Send `data` to the supervisor's stdin, in one request that may take up to `timeout` seconds."""
        if self._closed or self.ended is not None:
            raise StreamClosed(self.ended or "the stream is closed")
        try:
            self._sandbox.commands.send_stdin(self.pid, data, request_timeout=timeout)
        except Exception as exc:
            raise StreamClosed(describe(exc, self._hint)) from exc

    def disconnect(self) -> None:
        """Release the pipe without stopping the supervisor (another connection follows it now)."""
        self.close(kill=False)

    def close(self, kill: bool = True) -> None:
        """Stop the supervisor (SIGKILL through the service; not with `kill=False`) and release the pipe.
        Idempotent, any thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self.ended is None:
            try:
                if kill:
                    self._sandbox.commands.kill(self.pid, request_timeout=5)
            except Exception:  # the sandbox may be gone already; closing it (the backend's job) ends the rest
                pass
            try:
                self._handle.disconnect()
            except Exception:
                pass
        self._thread.join(timeout=5)
        with self._read_lock:  # a reader in another thread is out of `select` before the descriptor goes
            os.close(self._rfd)
