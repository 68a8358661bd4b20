"""A pause at E2B cuts the supervisor's connection; the stream must carry on over the new one after the resume,
whichever comes first: the old connection's end or the resume. The full suite once lost the race (the old
connection ended before `follow`, closing the pipe the new connection writes to), so the order is forced here
with scripted SDK handles instead of left to timing."""

from __future__ import annotations

import base64
import queue
import threading
from typing import Any

import pytest

from agents.executor.e2b.stream import CommandStream, StreamClosed

END = object()


class ScriptedHandle:
    """The SDK's command handle as far as the stream uses it: iterated for (stdout, stderr, pty) and
    told what to deliver (base64 lines, as the relay prints them) or to end with an error."""

    def __init__(self, pid: int = 7) -> None:
        self.pid = pid
        self._items: queue.Queue[Any] = queue.Queue()
        self.ended = threading.Event()

    def say(self, data: bytes) -> None:
        self._items.put(base64.b64encode(data).decode() + "\n")

    def cut(self, error: Exception) -> None:
        self._items.put(error)

    def __iter__(self):
        try:
            while True:
                item = self._items.get()
                if isinstance(item, Exception):
                    raise item
                yield item, None, None
        finally:
            self.ended.set()

    def wait(self) -> Any:
        raise RuntimeError("no exit code")

    def disconnect(self) -> None:
        self._items.put(ConnectionError("disconnected"))


class NoSandbox:
    class commands:  # the SDK's attribute name
        @staticmethod
        def kill(pid: int, request_timeout: float) -> None:
            return None


def read_some(stream: CommandStream, timeout: float = 10) -> bytes:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = stream.read(65536, timeout=0.2)
        if data:
            return data
    raise AssertionError("nothing arrived")


def test_the_old_connection_ending_before_the_resume_does_not_end_the_stream():
    old = ScriptedHandle()
    stream = CommandStream(NoSandbox(), old, "test: ")
    try:
        old.say(b"before")
        assert read_some(stream) == b"before"
        stream.begin_pause()
        old.cut(ConnectionError("the service ended the connection (paused)"))
        assert old.ended.wait(10)
        stream._thread.join(10)  # the old pump has seen its end before anything follows
        new = ScriptedHandle()
        stream.follow(new)
        new.say(b"after")
        assert read_some(stream) == b"after"
        assert stream.ended is None
    finally:
        stream.close()


def test_the_old_connection_ending_after_the_resume_is_ignored():
    old = ScriptedHandle()
    stream = CommandStream(NoSandbox(), old, "test: ")
    try:
        stream.begin_pause()
        new = ScriptedHandle()
        stream.follow(new)
        old.cut(ConnectionError("late end of the old connection"))
        assert old.ended.wait(10)
        new.say(b"after")
        assert read_some(stream) == b"after"
        assert stream.ended is None
    finally:
        stream.close()


def test_an_end_during_a_pause_that_failed_is_the_commands_end():
    old = ScriptedHandle()
    stream = CommandStream(NoSandbox(), old, "test: ")
    try:
        stream.begin_pause()
        old.cut(ConnectionError("the supervisor's connection broke"))
        assert old.ended.wait(10)
        stream._thread.join(10)
        stream.pause_failed()
        with pytest.raises(StreamClosed, match="connection broke"):
            read_some(stream)
        with pytest.raises(StreamClosed):
            stream.follow(ScriptedHandle())
    finally:
        stream.close()


def test_without_a_pause_a_cut_connection_ends_the_stream():
    old = ScriptedHandle()
    stream = CommandStream(NoSandbox(), old, "test: ")
    try:
        old.cut(ConnectionError("cut"))
        with pytest.raises(StreamClosed, match="cut"):
            read_some(stream)
    finally:
        stream.close()
