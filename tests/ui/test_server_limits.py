"""The server stays up: per-visitor run limits and reaping sessions no page holds (API clients)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ui.page_presence import PagePresence
from ui.rate_limit import RateLimitedError, RunRateLimiter, visitor_of
from ui.session_registry import SessionRegistry


def test_runs_per_minute_per_visitor() -> None:
    limiter = RunRateLimiter(per_minute=3)
    for i in range(3):
        limiter.check("1.2.3.4", now=100.0 + i)
    with pytest.raises(RateLimitedError, match="3 per minute"):
        limiter.check("1.2.3.4", now=110.0)
    limiter.check("5.6.7.8", now=110.0)  # another visitor is not affected
    limiter.check("1.2.3.4", now=160.5)  # the window moved on


def test_visitor_address_is_the_proxys_hop_not_the_clients_claim() -> None:
    class Req:
        headers = {"x-forwarded-for": "6.6.6.6, 10.0.0.9"}
        client = type("C", (), {"host": "127.0.0.1"})()

    assert visitor_of(Req()) == "10.0.0.9"


def test_sessions_without_a_page_are_reaped_within_minutes(tmp_path: Path) -> None:
    presence = PagePresence()
    registry = SessionRegistry(tmp_path, agent_factory=lambda s, w: None, idle_timeout_s=3600,
                               pageless_idle_s=120, presence=presence)
    api = registry.get("api-client")
    tab = registry.get("browser-tab")
    presence.opened("browser-tab")
    now = api.last_active + 121
    registry.reap(now=now)
    assert registry.peek("api-client") is None
    assert registry.peek("browser-tab") is tab
    presence.closed("browser-tab")
    registry.reap(now=now)
    assert registry.peek("browser-tab") is None


class _FakeAgent:
    def __init__(self) -> None:
        self.memory = type("M", (), {"steps": []})()
        self.closed = False

    def interrupt(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def test_sandbox_cap_closes_idle_ones_first(tmp_path: Path) -> None:
    from ui.session_registry import ServerBusyError

    registry = SessionRegistry(tmp_path, agent_factory=lambda s, w: _FakeAgent(), max_sandboxes=2)
    first, second, third = (registry.get(k) for k in ("a", "b", "c"))
    for session, when in ((first, 10.0), (second, 20.0)):
        session.agent = _FakeAgent()
        session.last_active = when
    old_agent = first.agent
    registry.make_room(third)
    assert first.agent is None and old_agent.closed and first.hibernated is old_agent.memory
    assert second.agent is not None
    third.agent = _FakeAgent()
    for session in (second, third):
        session.hibernate = lambda: False  # both holders busy (running code): no room
    with pytest.raises(ServerBusyError, match="busy"):
        registry.make_room(first)


def test_concurrent_runs_per_visitor() -> None:
    limiter = RunRateLimiter(per_minute=100, at_once=2)
    with limiter.running("v"), limiter.running("v"):
        with pytest.raises(RateLimitedError, match="2 at a time"):
            with limiter.running("v"):
                pass
        with limiter.running("w"):
            pass
    with limiter.running("v"):  # places are given back
        pass
