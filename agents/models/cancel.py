"""Cancelling a model call from another thread: the Stop button reaching a stalled stream or a retry wait.

Why: a provider can send headers and then nothing for a minute, or ask to be retried in a minute. The
agent's step loop reads the model in a helper thread (agents/loop/model_reader.py) and, on Stop, cancels
its token: retry waits end at once, no new attempt starts, and the open response's socket is shut down so
a blocked read returns. The token travels in a context variable, so the Model interface keeps its shape.
"""
from __future__ import annotations

import contextvars
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

logger = logging.getLogger("agents.models")

_CURRENT: contextvars.ContextVar[CancelToken | None] = contextvars.ContextVar("agentdeck_cancel_token",
                                                                                 default=None)


class CancelToken:
    """Set once by whoever wants the call to stop; runs the registered closers at that moment."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._closers: dict[int, Callable[[], None]] = {}
        self._next_id = 0

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True as soon as the token is cancelled."""
        return self._event.wait(max(0.0, seconds))

    def on_cancel(self, closer: Callable[[], None]) -> Callable[[], None]:
        """Run `closer` when cancelled (now, if already); returns a function that unregisters it."""
        with self._lock:
            if not self._event.is_set():
                key = self._next_id
                self._next_id += 1
                self._closers[key] = closer

                def unregister() -> None:
                    self._closers.pop(key, None)

                return unregister
        _run(closer)
        return lambda: None

    def cancel(self) -> None:
        with self._lock:
            self._event.set()
            closers = list(self._closers.values())
            self._closers.clear()
        for closer in closers:
            _run(closer)


def _run(closer: Callable[[], None]) -> None:
    try:
        closer()
    except Exception as exc:
        logger.debug("Closing a cancelled model response failed: %s", exc)


def current_token() -> CancelToken | None:
    """The token of the model call running in this context, if the caller gave one."""
    return _CURRENT.get()


@contextmanager
def cancel_scope(token: CancelToken) -> Iterator[CancelToken]:
    """Make `token` the current one for the model calls made inside the block."""
    reset = _CURRENT.set(token)
    try:
        yield token
    finally:
        _CURRENT.reset(reset)


_LINKS = ("completion_stream", "response", "_response", "streaming_response", "http_response")


def abort_stream(obj: Any) -> bool:
    """Shut down the socket under a streamed HTTP response (litellm wrapper, openai Stream, httpx Response).

    Why shutdown and not close: closing a socket does not wake a thread blocked reading it on Linux;
    shutting it down does, and that thread then sees an error and cleans up in its own time.
    Returns True when a socket was found.
    """
    found = False
    seen: set[int] = set()
    todo = [(obj, 0)]
    while todo:
        current, depth = todo.pop()
        if current is None or id(current) in seen or depth > 4:
            continue
        seen.add(id(current))
        extensions = getattr(current, "extensions", None)
        if isinstance(extensions, dict) and extensions.get("network_stream") is not None:
            sock = extensions["network_stream"].get_extra_info("socket")
            if isinstance(sock, socket.socket):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                    found = True
                except OSError:
                    pass
        for link in _LINKS:
            try:
                todo.append((getattr(current, link, None), depth + 1))
            except Exception:
                continue
    return found


def release_stream(obj: Any) -> None:
    """Close a streamed response from the thread that read it (returns its connection); best effort."""
    for candidate in (getattr(obj, "completion_stream", None), obj):
        close = getattr(candidate, "close", None)
        if callable(close) and not hasattr(candidate, "gi_frame"):  # generators close themselves
            try:
                close()
            except Exception as exc:
                logger.debug("Closing a model response failed: %s", exc)
            return
