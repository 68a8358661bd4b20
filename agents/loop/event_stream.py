"""A run's events as its loop thread emits them: `agent.run(task, stream=True)` returns one.

Iterate it to read every event (blocking), or call `get(timeout)` / `get_nowait()` to wait at most that
long, as a web UI's drain does to send heartbeats and to gather a burst of events into one update. Reading
the loop's queue directly matters under load: a relay thread in between would wake once per event and
compete for the interpreter lock with every other session's threads.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

from agents.events import Event


class _Marker:
    """A queue item that is no event."""


_END = _Marker()
_WAKE = _Marker()  # put by `wake`: a reader waiting in `get` returns None at once


class _Failure:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


_Item = Event | _Failure | _Marker


def _work(body: Callable[[Callable[[Event], None]], Any], events: queue.SimpleQueue[_Item]) -> None:
    try:
        body(events.put)
    except BaseException as exc:  # a bug in the loop itself: surface it to the consumer
        events.put(_Failure(exc))
    finally:
        events.put(_END)


class EventStream(Iterator[Event]):
    """Runs `body(emit)` in a daemon thread and hands its events to one consumer.

    The loop's own failure (a bug, not a failed run: those end with RunFinished) is raised to the consumer.
    `close()` (also on garbage collection) tells a run whose consumer went away to stop, via `on_abandon`.
    """

    def __init__(self, body: Callable[[Callable[[Event], None]], Any], on_abandon: Callable[[], None],
                 thread_name: str) -> None:
        self._events: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._on_abandon = on_abandon
        self._ended = False
        # The thread holds the queue, not this object, so a consumer that drops the stream lets it be collected.
        self._thread = threading.Thread(target=_work, args=(body, self._events), name=thread_name, daemon=True)
        self._thread.start()

    @property
    def ended(self) -> bool:
        """True once the consumer has been given the end of the stream (or the loop's failure)."""
        return self._ended

    def get(self, timeout: float | None = None) -> Event | None:
        """The next event, waiting at most `timeout` seconds (None: no limit); None if none came in time.
        Raises StopIteration at the end of the stream and the loop's own exception if it crashed."""
        if self._ended:
            raise StopIteration
        try:
            item = self._events.get(timeout=timeout)
        except queue.Empty:
            return None
        return self._unwrap(item)

    def get_nowait(self) -> Event | None:
        """The next event if one is waiting, else None (StopIteration at the end, as `get`)."""
        if self._ended:
            raise StopIteration
        try:
            item = self._events.get_nowait()
        except queue.Empty:
            return None
        return self._unwrap(item)

    def wake(self) -> None:
        """Make a reader waiting in `get` return (None) now: e.g. to check at once whether a stop took effect."""
        self._events.put(_WAKE)

    def _unwrap(self, item: _Item) -> Event | None:
        if isinstance(item, _Marker):
            if item is _END:
                self._ended = True
                raise StopIteration
            return None  # _WAKE
        if isinstance(item, _Failure):
            self._ended = True
            raise item.exc
        return item

    def __iter__(self) -> EventStream:
        return self

    def __next__(self) -> Event:
        while True:
            event = self.get()
            if event is not None:  # None: a `wake`, which iteration does not need
                return event

    def close(self) -> None:
        """The consumer is done: a run still going is told to stop."""
        if self._thread.is_alive():
            self._on_abandon()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
