"""What the code prints during a run: captured (bounded), and streamed to the app while the code runs.

Streaming sends what was printed when a line is complete (at most every 0.1 s; the first line of a run at
once) and on flush(), and a flusher thread sends output that would otherwise wait (a print followed by a long
computation) within 0.1 s. Frames from the flusher, the code's tool calls and the result must never
interleave on the channel: everything the worker writes goes through one lock (`FrameWriter`).
"""

from __future__ import annotations

import io
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

_monotonic = time.monotonic
STREAM_INTERVAL_S = 0.1


class OutputCapture(io.TextIOBase):
    """sys.stdout/sys.stderr during a run: bounded, optionally streamed to the app (`send`)."""

    def __init__(self, limit: int, send: Callable[[str], None] | None):
        super().__init__()
        self.limit = limit
        self.send = send
        self.parts: list[str] = []
        self.size = 0
        self.dropped = 0
        self.sent = 0
        self.last = float("-inf")  # the first write of a run goes out at once
        self._lock = threading.RLock()  # the code's threads and the flusher

    @property
    def encoding(self) -> str:  # type: ignore[override]  # TextIOBase declares a plain attribute
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, s: str) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        n = len(s)
        with self._lock:
            room = self.limit - self.size
            if n <= room:
                self.parts.append(s)
                self.size += n
            else:
                if room > 0:
                    self.parts.append(s[:room])
                    self.size = self.limit
                self.dropped += n - max(room, 0)
            if self.send is not None and s.endswith("\n") and _monotonic() - self.last > STREAM_INTERVAL_S:
                self.stream()  # whole lines; a partial one goes with the next line or the flusher
        return n

    def flush(self) -> None:
        if self.send is not None:
            self.stream()

    def stream(self) -> None:
        """Send what was printed since the last send (if streaming)."""
        with self._lock:
            if self.send is not None and self.sent < len(self.parts):
                text = "".join(self.parts[self.sent:])
                self.sent = len(self.parts)
                self.send(text)
            self.last = _monotonic()

    def stream_if_waiting(self) -> None:
        """The flusher's call: send output that has waited for a while."""
        with self._lock:
            if self.sent < len(self.parts) and _monotonic() - self.last > STREAM_INTERVAL_S:
                self.stream()

    def close_stream(self) -> None:
        """The run is over: nothing more is streamed (the rest goes with the result, see `tail`)."""
        with self._lock:
            self.send = None

    def tail(self) -> str:
        with self._lock:
            text = "".join(self.parts[self.sent:])
        if self.dropped:
            text += (f"\n[output truncated: {self.dropped} more characters not shown; "
                     f"raise max_output_chars (now {self.limit}) to see more]\n")
        return text


class FrameWriter:
    """The worker's one way to write to the channel (a frame at a time, never interleaved)."""

    def __init__(self, write: Callable[[dict[str, Any]], None]) -> None:
        self._write = write
        self.lock = threading.Lock()

    def __call__(self, msg: dict[str, Any]) -> None:
        with self.lock:
            self._write(msg)


class LogFlusher:
    """A thread that streams the live capture's waiting output while one run goes on.

    It lives only as long as its run: the worker must be single-threaded between steps (a thread
    left running would be the place for code to outlive its step), so ``stop`` joins it.
    """

    def __init__(self) -> None:
        self.capture: OutputCapture | None = None
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None

    def watch(self, capture: OutputCapture) -> None:
        self.capture = capture
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(capture, self._stop),
                                        name="log-flusher", daemon=True)
        # The flusher is started with SIGINT blocked (threads inherit the mask), so an interrupt always lands in
        # the main thread, where the code runs: delivered to the flusher, it would not wake a sleeping step.
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            self._thread.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    def stop(self) -> None:
        thread, stop = self._thread, self._stop
        self._thread = self._stop = None
        if thread is not None and stop is not None:
            stop.set()
            thread.join()
        capture, self.capture = self.capture, None
        if capture is not None:
            capture.close_stream()

    @staticmethod
    def _loop(capture: OutputCapture, stop: threading.Event) -> None:
        while not stop.wait(STREAM_INTERVAL_S):
            try:
                capture.stream_if_waiting()
            except Exception:
                pass
