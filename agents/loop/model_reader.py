"""Reading a model's streamed reply in a helper thread, so Stop never waits for the provider.

Why: a provider can send its headers and then nothing for a minute, or ask to be retried in a minute.
Checking the stop flag between streamed pieces then means waiting that long. The reply is read in a
daemon thread feeding a queue; the step loop waits on the queue a tenth of a second at a time and checks
the flag in between. On Stop (or any early exit) the call's cancel token is set: retry waits end, no new
attempt starts, and the open response's socket is shut down, so the thread ends too.
"""
from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable, Iterator

from agents.errors import AgentInterrupted
from agents.models.base import ModelDelta
from agents.models.cancel import CancelToken, cancel_scope


class _End:
    """The queue item after the last delta."""


_END = _End()
POLL_S = 0.1  # how often the waiting step loop looks at the stop flag


class _Failure:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


_Item = ModelDelta | _Failure | _End


def _pump(make_stream: Callable[[], Iterator[ModelDelta]], token: CancelToken, out: queue.SimpleQueue[_Item]) -> None:
    """The helper thread: pass every delta on until the stream ends, fails, or the token is cancelled."""
    with cancel_scope(token):
        stream = None
        try:
            stream = make_stream()
            for delta in stream:
                if token.cancelled:
                    break
                out.put(delta)
        except BaseException as exc:
            if not token.cancelled:
                out.put(_Failure(exc))
        finally:
            close = getattr(stream, "close", None)
            if callable(close):
                try:
                    close()  # a generator's cleanup (closing the response) runs here, in its own thread
                except Exception:
                    pass
            out.put(_END)


def read_deltas(items: queue.SimpleQueue[_Item], should_stop: Callable[[], bool],
                poll_s: float = POLL_S) -> Iterator[ModelDelta]:
    """The deltas put in `items` until its end marker, checking `should_stop()` every `poll_s` (see
    `ModelStreamReader.deltas`; agents/loop/async_reader.py reads a call made in an event loop the same way)."""
    while True:
        if should_stop():
            raise AgentInterrupted("The run was stopped while the model was answering.")
        try:
            item = items.get(timeout=poll_s)
        except queue.Empty:
            continue
        if isinstance(item, _End):
            return
        if isinstance(item, _Failure):
            raise item.exc
        yield item


class ModelStreamReader:
    """One model call read in a daemon thread. Iterate `deltas(should_stop)`; always `close()` after."""

    def __init__(self, make_stream: Callable[[], Iterator[ModelDelta]], name: str = "model-stream") -> None:
        self.token = CancelToken()
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        context = contextvars.copy_context()  # the model sees the caller's context variables
        self._thread = threading.Thread(target=context.run, args=(_pump, make_stream, self.token, self._queue),
                                        name=name, daemon=True)
        self._thread.start()

    def deltas(self, should_stop: Callable[[], bool], poll_s: float = POLL_S) -> Iterator[ModelDelta]:
        """The call's deltas; raises AgentInterrupted within `poll_s` of `should_stop()` turning true,
        and the call's own error if it failed."""
        return read_deltas(self._queue, should_stop, poll_s)

    def close(self) -> None:
        """End the call if it is still going (idempotent)."""
        self.token.cancel()

    @property
    def thread(self) -> threading.Thread:
        """The helper thread (tests check that it ends)."""
        return self._thread
