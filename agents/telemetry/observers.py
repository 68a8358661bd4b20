"""The observers subscribed to runs (agents/telemetry/hub.py hands each top-level run to them)."""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from agents.events import Event

EventSink = Callable[[Event], None]


class RunObserver(Protocol):
    """Something that watches runs: `start_run` is called as a top-level run starts and returns the function
    that gets each of its events (a managed agent's events included), or None to skip this run."""

    def start_run(self, agent: Any) -> EventSink | None: ...


_lock = threading.Lock()
_observers: tuple[RunObserver, ...] = ()


def subscribe(observer: RunObserver) -> None:
    """Watch every run from now on (idempotent for the same object)."""
    global _observers
    with _lock:
        if observer not in _observers:
            _observers = (*_observers, observer)


def unsubscribe(observer: RunObserver) -> None:
    global _observers
    with _lock:
        _observers = tuple(o for o in _observers if o is not observer)


def observers() -> tuple[RunObserver, ...]:
    return _observers
