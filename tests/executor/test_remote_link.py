"""The app's side of a remote sandbox's stream holds against a hostile or broken supervisor (no Docker needed).

A scripted supervisor on the other end of an in-memory `ByteStream` answers as a compromised or buggy one
would: a reply for another request, a late one, one too big, not JSON, of an unknown kind, a value of the wrong
type, a flood of worker bytes, a worker frame over the bounds, a stream that ends or breaks. Each must end in a
clear error, the stream closed, never a hang.
"""

from __future__ import annotations

import json
import queue
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from agents.executor.backend import FRAME_MAX_BYTES, FileInfo, SandboxSpec, WorkspaceSpec
from agents.executor.errors import SandboxStartError
from agents.executor.protocol import ChannelClosed, ProtocolError, frame
from agents.executor.remote import StreamClosed, SupervisedHost, SupervisorError, wire
from agents.executor.remote.link import StreamLink

Handler = Callable[[dict[str, Any]], list[bytes]]


class ScriptedStream:
    """A `ByteStream` whose other end is `handler`: each control request the app writes is answered with the
    frames the handler returns (anything at all)."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.out: queue.Queue[bytes] = queue.Queue()
        self.deframer = wire.Deframer(wire.TO_SUPERVISOR)
        self.closed = threading.Event()
        self.worker_bytes = bytearray()
        self.signals: list[bytes] = []

    def write(self, data: bytes, timeout: float) -> None:
        if self.closed.is_set():
            raise BrokenPipeError("closed")
        for kind, payload in self.deframer.feed(data):
            if kind == b"C":
                for reply in self.handler(json.loads(payload)):
                    self.out.put(reply)
            elif kind == b"W":
                self.worker_bytes += payload
            else:
                self.signals.append(kind)

    def read(self, max_bytes: int, timeout: float) -> bytes | None:
        if self.closed.is_set():
            return b""
        try:
            data = self.out.get(timeout=min(timeout, 0.05))
        except queue.Empty:
            return None
        if data == b"":
            return b""
        if isinstance(data, Exception):
            raise data
        return data

    def close(self) -> None:
        self.closed.set()

    def push(self, data: bytes) -> None:
        self.out.put(data)


def answer(req: dict[str, Any], **fields: Any) -> list[bytes]:
    return [wire.pack_json(b"R", {"id": req["id"], **fields})]


def polite(req: dict[str, Any]) -> list[bytes]:
    values = {"cpu": 1.5, "pending": False, "woke_up": False, "threads": False, "disk": None, "log": ""}
    return answer(req, value=values.get(req["op"], True))


def worker_frame(msg: dict[str, Any]) -> bytes:
    return wire.pack(b"W", frame(msg))


class NoFiles:
    def put(self, relpath: str, data: bytes, max_bytes: int) -> None: ...
    def get(self, relpath: str, max_bytes: int) -> bytes: return b""
    def list(self, max_entries: int) -> dict[str, FileInfo]: return {}
    def remove(self, relpath: str) -> None: ...


def make_host(tmp_path, handler: Handler = polite, timeout: float = 2.0) -> tuple[SupervisedHost, ScriptedStream,
                                                                                   list[bool]]:
    stream = ScriptedStream(handler)
    closed: list[bool] = []
    spec = SandboxSpec(WorkspaceSpec(str(tmp_path / "ws")))
    host = SupervisedHost(stream, NoFiles(), host_id="t1", on_close=lambda: closed.append(True), spec=spec,
                          control_timeout_s=timeout)
    return host, stream, closed


def test_a_working_supervisor_gives_frames_and_values(tmp_path):
    host, stream, _ = make_host(tmp_path)
    stream.push(worker_frame({"op": "ready", "layers": []}))
    assert host.wait_ready(5)["op"] == "ready"
    assert host.cpu_seconds() == 1.5
    host.freeze()
    host.send({"op": "run", "id": "a"})
    assert frame({"op": "run", "id": "a"}) in bytes(stream.worker_bytes)
    stream.push(worker_frame({"op": "result", "id": "a"})[:7])  # a frame in two pieces
    stream.push(worker_frame({"op": "result", "id": "a"})[7:])
    assert host.read(timeout=5) == {"op": "result", "id": "a"}
    assert host.read(timeout=0.05) is None
    host.interrupt()
    host.close()
    assert stream.signals[:1] == [b"I"] and stream.closed.is_set()


def test_a_reply_for_another_request_kills_the_sandbox(tmp_path):
    host, stream, _ = make_host(tmp_path, lambda req: answer(req, value=1.0) if req["op"] == "start" else
                                answer({"id": req["id"] + 7}, value=1.0))
    with pytest.raises(SupervisorError, match="answered request"):
        host.cpu_seconds()
    assert host.dead and stream.closed.is_set()
    with pytest.raises(ChannelClosed):
        host.read(timeout=1)


def test_a_late_reply_kills_the_sandbox_within_its_deadline(tmp_path):
    host, stream, _ = make_host(tmp_path, lambda req: polite(req) if req["op"] == "start" else [], timeout=0.3)
    started = time.monotonic()
    with pytest.raises(SupervisorError, match="did not answer 'cpu'"):
        host.cpu_seconds()
    assert time.monotonic() - started < 3
    assert stream.closed.is_set()


@pytest.mark.parametrize("reply", [
    wire.HEADER.pack(b"R", 10 * 1024 * 1024),  # a reply far over its bound: refused from the header
    wire.pack(b"R", b"{not json"),
    wire.pack(b"R", b"[1, 2]"),
    wire.pack(b"R", b"[" * 100 + b"]" * 100),
    wire.pack(b"Z", b"{}"),  # an unknown kind
    wire.HEADER.pack(b"W", wire.CHUNK_BYTES + 1),  # a worker chunk over its bound
])
def test_a_malformed_or_oversized_frame_kills_the_sandbox(tmp_path, reply):
    host, stream, _ = make_host(tmp_path, lambda req: polite(req) if req["op"] == "start" else [reply])
    with pytest.raises(SupervisorError, match="invalid"):
        host.cpu_seconds()
    assert stream.closed.is_set()


@pytest.mark.parametrize("value", ["1.0", float("nan"), -1.0, 1e12, True, None, [1]])
def test_a_value_of_the_wrong_kind_kills_the_sandbox(tmp_path, value):
    host, stream, _ = make_host(tmp_path, lambda req: polite(req) if req["op"] == "start" else
                                answer(req, value=value))
    with pytest.raises(SupervisorError, match="answered 'cpu'"):
        host.cpu_seconds()
    assert stream.closed.is_set()


def test_replies_nobody_asked_for_kill_the_sandbox(tmp_path):
    host, stream, _ = make_host(tmp_path)
    for i in range(10):
        stream.push(wire.pack_json(b"R", {"id": 100 + i, "value": 1}))
    with pytest.raises(StreamClosed):
        host.cpu_seconds()
    assert stream.closed.is_set()


def test_a_worker_frame_over_the_bounds_is_a_protocol_error(tmp_path):
    host, stream, _ = make_host(tmp_path)
    stream.push(wire.pack(b"W", struct.pack(">I", FRAME_MAX_BYTES + 1) + b"{}"))
    with pytest.raises(ProtocolError, match="exceeds the limit"):
        host.read(timeout=5)


def test_a_worker_flooding_the_stream_kills_the_sandbox(tmp_path):
    host, stream, _ = make_host(tmp_path)
    chunk = wire.pack(b"W", b"x" * wire.CHUNK_BYTES)
    for _ in range((2 * FRAME_MAX_BYTES) // wire.CHUNK_BYTES + 4):
        stream.push(chunk)
    deadline = time.monotonic() + 20
    while not stream.closed.is_set() and time.monotonic() < deadline:
        stream.closed.wait(0.05)
    assert stream.closed.is_set() and host.dead
    with pytest.raises(SupervisorError, match="did not ask for"):
        host.read(timeout=1)


@pytest.mark.parametrize("end", [b"", ConnectionResetError("reset by peer")])
def test_a_cut_stream_raises_channel_closed_for_every_waiter(tmp_path, end):
    host, stream, closed = make_host(tmp_path)
    stream.push(end)
    with pytest.raises(StreamClosed, match="stream to the remote sandbox"):
        host.read(timeout=5)
    assert host.dead
    with pytest.raises(StreamClosed):
        host.send({"op": "run"})
    assert "stream" in host.exit_description()
    host.close()
    assert closed == [True]


def test_the_worker_ending_is_reported_after_its_last_frame(tmp_path):
    host, stream, _ = make_host(tmp_path)
    stream.push(worker_frame({"op": "result", "id": "z"}))
    stream.push(wire.pack_json(b"X", {"how": "killed by SIGKILL (possibly out of memory)"}))
    assert host.read(timeout=5) == {"op": "result", "id": "z"}
    with pytest.raises(ChannelClosed, match="SIGKILL"):
        host.read(timeout=5)
    assert host.dead and host.exit_description() == "killed by SIGKILL (possibly out of memory)"


def test_a_supervisor_that_cannot_start_the_worker_is_a_start_error(tmp_path):
    with pytest.raises(SandboxStartError, match="could not start: no room"):
        make_host(tmp_path, lambda req: answer(req, error="no room"))


def test_a_wake_up_ends_a_read(tmp_path):
    import os

    host, _, _ = make_host(tmp_path)
    r, w = os.pipe()
    threading.Timer(0.1, os.write, (w, b"!")).start()
    assert host.read(timeout=10, wake_fd=r) is None
    os.close(r)
    os.close(w)


def test_stream_link_never_hangs_on_a_silent_stream():
    link = StreamLink(ScriptedStream(lambda req: []))
    with pytest.raises(SupervisorError):
        link.call("cpu", 0.2)
    link.close()
