"""A run's trace sent over OTLP/HTTP (protobuf) to a receiver on loopback, configured by the OTEL_* variables."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from agents import ReplayModel, ToolCallingAgent, telemetry
from agents.errors import ConfigurationError
from agents.telemetry.setup import provider_from_environment, wants_tracing
from tests.agents.conftest import call


class _Receiver(BaseHTTPRequestHandler):
    received: list[tuple[str, str, bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).received.append((self.path, self.headers.get("Content-Type", ""), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def receiver():
    _Receiver.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Receiver.received
    server.shutdown()
    server.server_close()


def test_trace_reaches_an_otlp_receiver(receiver, monkeypatch):
    url, received = receiver
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_SERVICE_NAME": "agentdeck-test"}
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert wants_tracing(environ)
    provider = provider_from_environment(environ)
    telemetry.instrument(tracer_provider=provider)
    try:
        agent = ToolCallingAgent(tools=[], model=ReplayModel([call("final_answer", answer="4")]), verbosity=0)
        assert agent.run("2+2?") == "4"
        assert provider.force_flush(10_000)
    finally:
        telemetry.uninstrument()
        provider.shutdown()
    assert received and all(path == "/v1/traces" for path, _, _ in received)
    assert all(kind == "application/x-protobuf" for _, kind, _ in received)
    spans, services = [], set()
    for _, _, body in received:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            services |= {a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"}
            for scope_spans in resource_spans.scope_spans:
                spans.extend(scope_spans.spans)
    assert services == {"agentdeck-test"}
    names = {span.name for span in spans}
    assert {"invoke_agent ToolCallingAgent", "step 1", "chat replay"} <= names
    run = next(s for s in spans if s.name == "invoke_agent ToolCallingAgent")
    attributes = {a.key: a.value for a in run.attributes}
    assert attributes["gen_ai.operation.name"].string_value == "invoke_agent"
    assert attributes["agentdeck.run.state"].string_value == "success"


def test_the_variables_decide_whether_traces_are_exported():
    assert not wants_tracing({})
    assert not wants_tracing({"OTEL_SERVICE_NAME": "x"})
    assert wants_tracing({"OTEL_TRACES_EXPORTER": "console"})
    assert not wants_tracing({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"})
    assert not wants_tracing({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"})
    with pytest.raises(ConfigurationError, match="http/protobuf"):
        provider_from_environment({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1",
                                   "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
