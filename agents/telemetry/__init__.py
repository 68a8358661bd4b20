"""Observability: traces (OpenTelemetry GenAI conventions) and metrics, built from the typed event stream.

    from agents import telemetry
    telemetry.instrument(tracer_provider=provider)      # or set OTEL_EXPORTER_OTLP_ENDPOINT=...

`hub.observe_run` is the loop's one hook: with nothing subscribed a run's events go straight to their consumer.
This module imports OpenTelemetry only when tracing is asked for (`instrument` and the names below load it).
"""
from __future__ import annotations

from typing import Any

from agents.telemetry.hub import observe_run
from agents.telemetry.observers import RunObserver, subscribe, unsubscribe

_FROM_SETUP = ("configure_from_environment", "instrument", "is_instrumented", "uninstrument")

__all__ = ["RunObserver", "observe_run", "subscribe", "unsubscribe", *_FROM_SETUP]


def __getattr__(name: str) -> Any:
    if name in _FROM_SETUP:
        from agents.telemetry import setup
        return getattr(setup, name)
    raise AttributeError(f"module 'agents.telemetry' has no attribute {name!r}")
