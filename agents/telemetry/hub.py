"""Where a run's events meet the observers: traces, metrics, anything an embedding program subscribes.

The event stream is the spine (agents/events.py); an observer is one more consumer of it, like the chat and the
console. `observe_run` is called once per top-level run: with no observer subscribed it hands the emit function
back untouched, so a run pays nothing per event when telemetry is off.
"""
from __future__ import annotations

import logging
import os
from typing import Any

from agents.events import Event
from agents.telemetry.observers import EventSink, observers

_log = logging.getLogger(__name__)
_environment_read = False


def _read_environment() -> None:
    """Once, before the first run: the standard OTEL_* variables may ask for traces (agents/telemetry/setup.py).
    The OpenTelemetry packages are imported only then."""
    global _environment_read
    _environment_read = True
    if any(name.startswith("OTEL_") for name in os.environ):
        from agents.telemetry.setup import configure_from_environment
        configure_from_environment()


def observe_run(agent: Any, emit: EventSink, parent_id: str | None) -> EventSink:
    """The emit function a run should use: `emit` itself, or `emit` followed by every observer's sink.

    A managed agent's run (`parent_id` set) already emits into its manager's observed function: it is left alone,
    so each event reaches an observer once."""
    if not _environment_read:
        _read_environment()
    if parent_id is not None or not observers():
        return emit
    sinks = [sink for sink in (o.start_run(agent) for o in observers()) if sink is not None]
    if not sinks:
        return emit

    def observed(event: Event) -> None:
        emit(event)
        for sink in sinks:
            try:
                sink(event)
            except Exception:  # an observer's bug must never break the run it watches
                _log.exception("A telemetry observer failed on %s; the run goes on.", event.kind)

    return observed
