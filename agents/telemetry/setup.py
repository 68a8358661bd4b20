"""Turning traces on: in code (`instrument(tracer_provider=...)`) or by the standard OpenTelemetry variables.

From the environment (read once, before the first run): traces are exported over OTLP/HTTP when
`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, or `OTEL_TRACES_EXPORTER` names
`otlp` or `console`; `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` keeps them off. The exporter reads
the other `OTEL_*` variables itself (headers, timeout, `OTEL_SERVICE_NAME`). Prompts, outputs and tool arguments
are recorded only with `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` (or `record_content=True`).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from agents.errors import ConfigurationError
from agents.telemetry import observers as hub
from agents.telemetry.tracing import SCOPE, TraceObserver

CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_TRUE = {"1", "true", "yes", "on"}

_current: TraceObserver | None = None


def instrument(tracer_provider: Any = None, record_content: bool | None = None) -> None:
    """Trace every run from now on, into `tracer_provider` (default: the global one, `opentelemetry.trace`).
    `record_content` (default: the environment's `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`) records
    the task, the model's replies, code, tool arguments and results; off, a trace holds names, times and counts."""
    global _current
    from opentelemetry import trace

    uninstrument()
    provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
    if record_content is None:
        record_content = os.environ.get(CONTENT_VARIABLE, "").strip().lower() in _TRUE
    _current = TraceObserver(provider.get_tracer(SCOPE), record_content=record_content)
    hub.subscribe(_current)


def uninstrument() -> None:
    """Stop tracing runs (runs already started finish their traces)."""
    global _current
    if _current is not None:
        hub.unsubscribe(_current)
        _current = None


def is_instrumented() -> bool:
    return _current is not None


def wants_tracing(environ: Mapping[str, str]) -> bool:
    """Whether the standard OpenTelemetry variables ask for traces to be exported."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = {name.strip().lower() for name in environ.get("OTEL_TRACES_EXPORTER", "").split(",") if name.strip()}
    if exporters == {"none"}:
        return False
    return bool(exporters & {"otlp", "console"} or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def provider_from_environment(environ: Mapping[str, str]) -> Any:
    """A TracerProvider exporting as the variables say (OTLP over HTTP/protobuf, or the console)."""
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    except ImportError as exc:
        raise ConfigurationError(
            "OTEL_* variables ask for traces, but the OpenTelemetry SDK is not installed: "
            "pip install -r requirements.txt (opentelemetry-sdk, opentelemetry-exporter-otlp-proto-http).") from exc
    protocol = environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    if protocol and protocol.strip() != "http/protobuf":
        raise ConfigurationError(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported here: AgentDeck "
                                 "exports traces over OTLP/HTTP, so set it to 'http/protobuf' (or leave it unset).")
    provider = TracerProvider(resource=Resource.create({"service.name": environ.get("OTEL_SERVICE_NAME",
                                                                                   "agentdeck")}))
    exporters = {name.strip().lower() for name in environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",")}
    chosen: list[SpanExporter] = []
    if "console" in exporters:
        chosen.append(ConsoleSpanExporter())
    if "otlp" in exporters or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") \
            or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        chosen.append(OTLPSpanExporter())
    for exporter in chosen:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def configure_from_environment(environ: Mapping[str, str] | None = None) -> bool:
    """Turn tracing on if the variables ask for it and the program has not instrumented in code; True if on.
    The provider becomes the global one, so a program's own spans share it (and its exporter is flushed at
    exit by the SDK)."""
    environ = os.environ if environ is None else environ
    if is_instrumented() or not wants_tracing(environ):
        return is_instrumented()
    from opentelemetry import trace

    provider = provider_from_environment(environ)
    trace.set_tracer_provider(provider)
    instrument(trace.get_tracer_provider())
    return True
