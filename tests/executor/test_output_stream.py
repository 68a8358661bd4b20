"""The worker's output capture: what is streamed when, and one writer at a time on the channel."""
from __future__ import annotations

import threading
import time

from agents.executor.output import FrameWriter, LogFlusher, OutputCapture


def wait_for(condition, timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_whole_lines_stream_partial_lines_wait_for_flush_or_the_flusher() -> None:
    sent: list[str] = []
    capture = OutputCapture(1000, sent.append)
    capture.write("first line")
    assert sent == []  # a partial line waits for the rest of it
    capture.write("\n")
    assert sent == ["first line\n"]  # the first whole line of a run goes out at once
    capture.write("second\n")
    assert sent == ["first line\n"]  # within 0.1 s of the last send: gathered
    capture.flush()
    assert sent == ["first line\n", "second\n"]
    flusher = LogFlusher()
    flusher.watch(capture)
    capture.write("50%")  # a partial line, then the code computes for a long time
    assert wait_for(lambda: sent[-1:] == ["50%"]), sent
    flusher.stop()
    capture.write(" done\n")
    assert sent[-1] == "50%" and capture.tail() == " done\n"  # after the run: in the result, not streamed


def test_frames_are_written_one_at_a_time() -> None:
    active, overlaps, frames = [0], [0], []

    def slow_write(msg: dict) -> None:
        active[0] += 1
        if active[0] > 1:
            overlaps[0] += 1
        time.sleep(0.005)  # a frame larger than a pipe's atomic write takes several writes
        frames.append(msg)
        active[0] -= 1

    writer = FrameWriter(slow_write)
    capture = OutputCapture(10**6, lambda text: writer({"op": "log", "text": text}))
    flusher = LogFlusher()
    flusher.watch(capture)

    def code() -> None:
        for i in range(100):
            capture.write("x" * 10)
            writer({"op": "tool", "n": i})
            time.sleep(0.0005)

    thread = threading.Thread(target=code)
    thread.start()
    thread.join(10)
    flusher.stop()
    assert overlaps[0] == 0
    assert [f["n"] for f in frames if f["op"] == "tool"] == list(range(100))
    assert any(f["op"] == "log" for f in frames)
