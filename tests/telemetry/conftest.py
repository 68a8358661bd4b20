"""Traces into an in-memory exporter; tracing is turned off again after each test."""
from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agents import telemetry


@pytest.fixture
def traced():
    """An exporter holding every finished span, with the agents instrumented into its provider."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter, provider
    telemetry.uninstrument()
    provider.shutdown()
