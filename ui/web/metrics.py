"""The operator's Prometheus metrics: off by default, never served to visitors.

Turned on by either (or both) of:
- `AGENTDECK_METRICS_PORT=9464`: a separate listener on 127.0.0.1 only, for a scraper on the same machine (or a
  sidecar); the app's own port never serves it.
- `AGENTDECK_METRICS_TOKEN=<secret>`: `/metrics` on the app's port, for a request carrying
  `Authorization: Bearer <secret>`. Why not "loopback peers": behind a reverse proxy on the same host every
  visitor is a loopback peer. Anyone else asking for `/metrics` gets 404, as if it did not exist.

Run, step, model, tool and sandbox figures are counted from the event stream (agents/telemetry/metrics.py); the
session figures are read from the session registry when scraped; saves and refusals are counted where they happen.
"""
from __future__ import annotations

import hmac
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, generate_latest, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from agents.executor.pool import pooled_sandboxes
from agents.telemetry import subscribe
from agents.telemetry.metrics import EventMetrics

REGISTRY = CollectorRegistry()
SAVES = Counter("agentdeck_chat_saves", "Saves of a chat to disk, by outcome (ok, failed).", ["outcome"],
                registry=REGISTRY)
REFUSALS = Counter("agentdeck_run_refusals", "Runs refused before they started, by reason (rate_limit: a "
                   "visitor's limits; busy: no sandbox place; disk: the disk floor).", ["reason"], registry=REGISTRY)
ROUTE = "/metrics"
_started = threading.Lock()
_running: dict[str, Any] = {}


def count_save(ok: bool) -> None:
    SAVES.labels("ok" if ok else "failed").inc()


def count_refusal(reason: str) -> None:
    REFUSALS.labels(reason).inc()


@dataclass(frozen=True)
class MetricsConfig:
    port: int | None = None
    token: str | None = None

    @property
    def enabled(self) -> bool:
        return self.port is not None or bool(self.token)

    @classmethod
    def from_settings(cls, settings: Any) -> MetricsConfig:
        """From the app's settings object (ui/config/server.py checks the port's range and the token's length);
        None (a configuration built by hand): off."""
        if settings is None:
            return cls()
        token = settings.metrics_token.get_secret_value().strip() if settings.metrics_token is not None else ""
        return cls(port=settings.metrics_port, token=token or None)


class SessionCollector(Collector):
    """Live figures read from the session registry at each scrape."""

    def __init__(self, registry: Any) -> None:
        self._registry = registry

    def collect(self) -> Iterator[GaugeMetricFamily]:
        sessions = GaugeMetricFamily("agentdeck_sessions", "Live sessions (browser tabs and API clients).")
        sessions.add_metric([], len(self._registry))
        yield sessions
        sandboxes = GaugeMetricFamily("agentdeck_sandboxes", "Sandboxes by state (live: a session's agent holds "
                                      "one; pooled: started ahead, waiting for a session; starting: a place "
                                      "promised to a run whose agent is being built).", labels=["state"])
        for state, count in self._registry.sandbox_counts().items():
            sandboxes.add_metric([state], count)
        sandboxes.add_metric(["pooled"], pooled_sandboxes())
        yield sandboxes


def start(config: MetricsConfig, session_registry: Any) -> None:
    """Count from now on and serve as configured (once per process; the app calls it at launch)."""
    if not config.enabled:
        return
    with _started:
        if _running:
            return
        subscribe(EventMetrics(REGISTRY))
        REGISTRY.register(SessionCollector(session_registry))
        _running["config"] = config
        if config.port is not None:
            _running["server"] = start_http_server(config.port, addr="127.0.0.1", registry=REGISTRY)


Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class MetricsMiddleware:
    """`/metrics` on the app's port: the figures for the operator's bearer token, 404 for anyone else."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], token: str | None = None) -> None:
        self.app = app
        self._token = token.encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or str(scope.get("path", "")).rstrip("/") != ROUTE:
            await self.app(scope, receive, send)
            return
        if scope.get("method") == "GET" and self._authorized(scope):
            await _reply(send, 200, generate_latest(REGISTRY), CONTENT_TYPE_LATEST.encode())
        else:
            await _reply(send, 404, b'{"detail":"Not Found"}', b"application/json")

    def _authorized(self, scope: Scope) -> bool:
        if self._token is None:
            return False
        headers = [value for name, value in scope.get("headers") or [] if name.lower() == b"authorization"]
        if len(headers) != 1:
            return False
        scheme, _, credential = headers[0].partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credential.strip(), self._token)


async def _reply(send: Send, status: int, body: bytes, content_type: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode()),
                            (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": body})
