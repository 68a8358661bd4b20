"""The app's end of the one stream: a reader thread that splits it, the worker's frames, the control calls.

Why a thread: a `ByteStream` is not a file descriptor the app can `select` on together with its wake-up pipe,
and control replies must be read while the app is not reading worker frames. The thread only splits the stream
(`wire.Deframer`, bounds per kind) and hands the parts over: the worker's bytes to a bounded buffer parsed with
the worker-frame bounds of `backend.py`, replies to a queue. Anything out of line (an unknown kind, a frame
over its bound, a reply nobody asked for, a late one, one for another request, a flood) fails the link: the
stream is closed (the supervisor then kills the worker) and every waiter gets `SupervisorError` or
`StreamClosed` with the reason, so the app never hangs on a remote sandbox.
"""

from __future__ import annotations

import os
import queue
import select
import threading
import time
from typing import Any

from ..backend import FRAME_MAX_BYTES, FRAME_MAX_CONTAINERS
from ..protocol import FrameReader
from . import wire
from .interface import ByteStream, StreamClosed

READ_POLL_S = 0.5  # the reader thread's longest wait in `ByteStream.read` (it checks for close this often)
WRITE_TIMEOUT_S = 10.0
WORKER_BACKLOG_BYTES = 2 * FRAME_MAX_BYTES + wire.CHUNK_BYTES  # worker bytes the app holds unread, at most
MAX_QUEUED_REPLIES = 4
_CLOSED: dict[str, Any] = {"closed": True}


class SupervisorError(StreamClosed):
    """The supervisor broke the stream's rules (a malformed, oversized, late or misdirected reply); the sandbox
    was killed, its variables are gone."""


class _BufferedFrames(FrameReader):
    """The worker's frames from the bytes the reader thread collected: `FrameReader`'s bounds and parsing over
    a buffer instead of a descriptor."""

    def take(self, data: bytearray) -> None:
        self._buf += data
        data.clear()

    def next(self) -> dict[str, Any] | None:
        return self._try_parse()

    @property
    def buffered(self) -> int:
        return len(self._buf)


class StreamLink:
    """One stream to one supervisor: `send_worker`, `read_worker`, `call`, `signal`, `fail`, `close`."""

    def __init__(self, stream: ByteStream) -> None:
        self._stream = stream
        self._deframer = wire.Deframer(wire.TO_APP)
        self._notify_r, self._notify_w = os.pipe()
        for fd in (self._notify_r, self._notify_w):
            os.set_blocking(fd, False)
        self._incoming = bytearray()  # worker bytes from the thread, not yet taken by the app
        self._lock = threading.Lock()
        self._frames = _BufferedFrames(self._notify_r, max_bytes=FRAME_MAX_BYTES,
                                       max_containers=FRAME_MAX_CONTAINERS)
        self._replies: queue.Queue[dict[str, Any]] = queue.Queue(MAX_QUEUED_REPLIES + 1)
        self._write_lock = threading.Lock()
        self._call_lock = threading.Lock()
        self._next_id = 0
        self.failure: str | None = None  # why the link is down (None while up)
        self.worker_exit: str | None = None  # how the worker ended, as the supervisor said (`X`)
        self._thread = threading.Thread(target=self._pump, name="sandbox-stream", daemon=True)
        self._thread.start()

    # --- the reader thread ------------------------------------------------------------------------------------
    def _pump(self) -> None:
        while self.failure is None:
            try:
                data = self._stream.read(wire.CHUNK_BYTES + wire.HEADER.size, READ_POLL_S)
            except Exception as exc:
                self.fail(f"the stream to the remote sandbox broke ({type(exc).__name__}: {str(exc)[:200]})")
                return
            if data is None:
                continue
            if not data:
                self.fail("the stream to the remote sandbox ended (the sandbox or its supervisor is gone)")
                return
            try:
                for kind, payload in self._deframer.feed(data):
                    self._dispatch(kind, payload)
            except wire.WireError as exc:
                self.fail(f"the sandbox's supervisor sent something invalid: {exc}", misbehaved=True)
                return

    def _dispatch(self, kind: bytes, payload: bytes) -> None:
        if kind == b"W":
            with self._lock:
                self._incoming += payload
                backlog = len(self._incoming) + self._frames.buffered
            if backlog > WORKER_BACKLOG_BYTES:
                raise wire.WireError(f"the worker wrote {backlog:,} bytes the app did not ask for")
            self._notify()
        elif kind == b"R":
            reply = wire.decode_control(payload)
            try:
                self._replies.put_nowait(reply)
            except queue.Full:
                raise wire.WireError("replies nobody asked for") from None
        else:  # b"X": the worker ended; its last bytes came before
            how = wire.decode_control(payload).get("how")
            self.worker_exit = how[:300] if isinstance(how, str) else "ended"
            self._notify()

    def _notify(self) -> None:
        try:
            os.write(self._notify_w, b".")
        except (BlockingIOError, OSError):
            pass  # already signalled (or closed)

    # --- failure and end --------------------------------------------------------------------------------------
    def fail(self, why: str, misbehaved: bool = False) -> None:
        """Take the link down for good: close the stream, wake every waiter with `why` (first reason wins)."""
        with self._lock:
            if self.failure is not None:
                return
            self.failure = why
            self.misbehaved = misbehaved
        try:
            self._stream.close()
        except Exception:
            pass
        try:
            self._replies.put_nowait(_CLOSED)
        except queue.Full:
            pass
        self._notify()

    misbehaved = False

    def error(self) -> StreamClosed:
        why = self.failure or "the stream to the remote sandbox is closed"
        return SupervisorError(why) if self.misbehaved else StreamClosed(why)

    def close(self) -> None:
        self.fail("the remote sandbox was closed")
        self._thread.join(timeout=READ_POLL_S * 2 + 1)
        for fd in (self._notify_r, self._notify_w):
            try:
                os.close(fd)
            except OSError:
                pass

    # --- writing ----------------------------------------------------------------------------------------------
    def _send(self, data: bytes, timeout: float = WRITE_TIMEOUT_S) -> None:
        if self.failure is not None:
            raise self.error()
        with self._write_lock:
            try:
                self._stream.write(data, timeout)
            except Exception as exc:
                self.fail(f"the stream to the remote sandbox broke while writing ({type(exc).__name__}: "
                          f"{str(exc)[:200]})")
                raise self.error() from exc

    def send_worker(self, data: bytes, timeout: float) -> None:
        """The worker's command bytes (one whole worker frame), in `W` frames the supervisor accepts."""
        limit = wire.TO_SUPERVISOR[b"W"]
        parts = b"".join(wire.pack(b"W", data[i:i + limit]) for i in range(0, len(data), limit))
        self._send(parts, timeout)

    def signal(self, kind: bytes) -> None:
        """`I` (interrupt) or `K` (kill): never answered, so any thread may send one while another waits."""
        self._send(wire.pack(kind), timeout=2.0)

    def call(self, op: str, timeout: float, **args: Any) -> dict[str, Any]:
        """One control request and its reply (checked: an object with this request's `id` and no `error`).
        A late, malformed or misdirected reply fails the link (`SupervisorError`); a reply with `error` raises
        `RemoteError` and leaves the link up."""
        with self._call_lock:
            self._next_id += 1
            rid = self._next_id
            self._send(wire.pack_json(b"C", {"id": rid, "op": op, **args}))
            try:
                reply = self._replies.get(timeout=timeout)
            except queue.Empty:
                self.fail(f"the sandbox's supervisor did not answer {op!r} within {timeout:g} s", misbehaved=True)
                raise self.error() from None
            if reply is _CLOSED:
                raise self.error()
            if reply.get("id") != rid:
                self.fail(f"the sandbox's supervisor answered request {str(reply.get('id'))[:20]} when "
                          f"{rid} ({op}) was asked", misbehaved=True)
                raise self.error()
            if "error" in reply:
                raise RemoteError(f"the sandbox's supervisor could not {op}: {str(reply['error'])[:500]}")
            return reply

    # --- the worker's frames ------------------------------------------------------------------------------------
    def _take(self) -> None:
        with self._lock:
            if self._incoming:
                self._frames.take(self._incoming)

    def pending(self) -> bool:
        """Whether worker bytes arrived that the app has not read (a partial frame counts)."""
        with self._lock:
            return bool(self._incoming) or self._frames.buffered > 0

    def read_worker(self, timeout: float | None, wake_fd: int | None) -> dict[str, Any] | None:
        """The worker's next frame (bounded, decoded), None on timeout or wake-up; `StreamClosed` when the
        worker ended (after its last frame) or the link is down; `ProtocolError` for a frame over the bounds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        fds = [self._notify_r] if wake_fd is None else [self._notify_r, wake_fd]
        while True:
            if self.misbehaved:  # nothing more of a supervisor that broke the rules is believed
                raise self.error()
            self._take()
            msg = self._frames.next()
            if msg is not None:
                return msg
            if self.failure is not None:
                raise self.error()
            if self.worker_exit is not None and not self.pending():
                raise StreamClosed(f"the sandbox worker {self.worker_exit}")
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = select.select(fds, [], [], left)[0]
            if not ready:
                return None
            if self._notify_r in ready:
                try:
                    os.read(self._notify_r, 4096)
                except BlockingIOError:
                    pass
            elif wake_fd is not None and wake_fd in ready:
                return None


class RemoteError(RuntimeError):
    """The supervisor answered that it could not do what was asked (its reason in the message)."""
