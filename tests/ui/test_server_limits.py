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


@pytest.mark.slow
def test_no_sandbox_worker_outlives_a_terminated_app(tmp_path: Path) -> None:
    """Workers are stopped between steps, so they cannot notice their app dying: the app must take them along."""
    import os

    from conftest import code_reply, run_app, write_transcript
    from gradio_client import Client

    transcript = write_transcript(tmp_path / "t.json", [code_reply("go", "x = 1\nfinal_answer(x)")])
    data = tmp_path / "data"
    data.mkdir()

    with run_app(transcript, data) as url:
        Client(url, verbose=False, download_files=False).predict({"text": "go", "files": []}, api_name="/run")
        app_pids = [int(e) for e in os.listdir("/proc") if e.isdigit() and _cmd_has(e, str(data))]
        children = [int(e) for e in os.listdir("/proc") if e.isdigit() and _parent(e) in app_pids
                    and _cmd_has(e, "_agentdeck_sandbox")]
        assert children, "the run started no sandbox worker"
    import time

    deadline = time.time() + 10
    while time.time() < deadline and any(os.path.exists(f"/proc/{pid}") and _state(pid) != "Z" for pid in children):
        time.sleep(0.1)
    assert not [pid for pid in children if os.path.exists(f"/proc/{pid}") and _state(pid) != "Z"]


def _cmd_has(pid: str, text: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            env = fh.read()
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return text.encode() in fh.read() or text.encode() in env
    except OSError:
        return False


def _parent(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return int(fh.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0].decode()
    except OSError:
        return "gone"
