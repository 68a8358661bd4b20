"""The server stays up: per-visitor run limits and reaping sessions no page holds (API clients)."""
from __future__ import annotations

from pathlib import Path

import pytest
from ui_testlib import form

from ui.session.presence import PagePresence
from ui.session.registry import SessionRegistry
from ui.web.rate_limit import RateLimitedError, RunRateLimiter, visitor_of


def test_runs_per_minute_per_visitor() -> None:
    limiter = RunRateLimiter(per_minute=3)
    for i in range(3):
        limiter.check("1.2.3.4", now=100.0 + i)
    with pytest.raises(RateLimitedError, match="3 per minute"):
        limiter.check("1.2.3.4", now=110.0)
    limiter.check("5.6.7.8", now=110.0)  # another visitor is not affected
    limiter.check("1.2.3.4", now=160.5)  # the window moved on


class _Req:
    headers = {"x-forwarded-for": "6.6.6.6, 10.0.0.9"}
    client = type("C", (), {"host": "127.0.0.1"})()


def test_visitor_address_behind_a_space_is_the_proxys_hop_not_the_clients_claim(monkeypatch) -> None:
    monkeypatch.setenv("SYSTEM", "spaces")
    monkeypatch.setenv("SPACE_ID", "someone/demo")
    assert visitor_of(_Req()) == "10.0.0.9"


def test_forwarded_header_is_ignored_without_a_trusted_proxy(monkeypatch) -> None:
    """Without a proxy anyone can write X-Forwarded-For: trusting it would give a fresh limit per request."""
    monkeypatch.delenv("SYSTEM", raising=False)
    monkeypatch.delenv("AGENTDECK_TRUST_FORWARDED", raising=False)
    monkeypatch.setenv("SPACE_ID", "someone/demo")  # the Space's image run elsewhere: only a name
    assert visitor_of(_Req()) == "127.0.0.1"
    monkeypatch.setenv("AGENTDECK_TRUST_FORWARDED", "1")
    assert visitor_of(_Req()) == "10.0.0.9"


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
    from ui.session.registry import ServerBusyError

    registry = SessionRegistry(tmp_path, agent_factory=lambda s, w: _FakeAgent(), max_sandboxes=2)
    first, second, third = (registry.get(k) for k in ("a", "b", "c"))
    for session, when in ((first, 10.0), (second, 20.0)):
        session.use_agent(_FakeAgent(), None)
        session.touch(when)
    old_agent = first.agent
    registry.make_room(third)
    assert first.agent is None and old_agent.closed and first.memory is old_agent.memory
    assert second.agent is not None
    third.use_agent(_FakeAgent(), None)
    for session in (second, third):
        session.hibernate = lambda: False  # both holders busy (running code): no room
    with pytest.raises(ServerBusyError, match="busy"):
        registry.make_room(first)


def test_a_visitor_past_the_sandbox_cap_gives_up_its_own_idle_sandboxes_first(tmp_path: Path) -> None:
    """Runs in fresh sessions each leave an idle sandbox: a visitor starting them (10 a minute) closed everyone
    else's idle sandboxes in turn, their variables rebuilt at the next message. The visitor holding the most
    sandboxes gives one up first."""
    registry = SessionRegistry(tmp_path, agent_factory=lambda s, w: _FakeAgent(), max_sandboxes=3)
    theirs = registry.get("theirs", visitor="203.0.113.5")
    theirs.use_agent(_FakeAgent(), None)
    theirs.touch(10.0)  # idle the longest
    for n in range(6):
        session = registry.get(f"flood-{n}", visitor="198.51.100.7")
        registry.make_room(session)
        session.use_agent(_FakeAgent(), None)
        session.touch(20.0 + n)
    assert theirs.agent is not None
    newcomer = registry.get("newcomer", visitor="192.0.2.1")
    registry.make_room(newcomer)
    assert theirs.agent is not None and registry.peek("flood-5").agent is not None
    assert sum(registry.peek(f"flood-{n}").agent is not None for n in range(6)) == 1


def test_a_place_promised_to_a_starting_run_is_not_given_twice(tmp_path: Path) -> None:
    """Two runs admitted at once used to both see one free place; the first one's promise now counts."""
    from ui.session.registry import ServerBusyError

    registry = SessionRegistry(tmp_path, agent_factory=lambda s, w: _FakeAgent(), max_sandboxes=2)
    holder, first, second = (registry.get(k) for k in ("h", "a", "b"))
    holder.use_agent(_FakeAgent(), None)
    holder.hibernate = lambda: False  # running code: cannot be closed
    registry.make_room(first)  # promised the last place; its agent is not built yet
    with pytest.raises(ServerBusyError):
        registry.make_room(second)
    first.use_agent(_FakeAgent(), None)  # the promise is kept: it now counts as a holder, and only once
    first.hibernate = lambda: False  # its run is going
    with pytest.raises(ServerBusyError):
        registry.make_room(second)
    first.close()  # a closed session's promise is void (and its sandbox is closed)
    registry.make_room(second)


def test_a_run_paused_for_a_decision_does_not_hold_its_sandbox_forever(tmp_path: Path, monkeypatch) -> None:
    from ui.session.session import Session

    presence = PagePresence()
    registry = SessionRegistry(tmp_path, agent_factory=lambda s, w: None, idle_timeout_s=7200,
                               pageless_idle_s=120, presence=presence, decision_timeout_s=600)
    api, tab = registry.get("api"), registry.get("tab")
    presence.opened("tab")
    paused, running = {api, tab}, {api, tab}  # running, paused on a decision
    monkeypatch.setattr(Session, "has_pending", lambda session: session in paused)
    monkeypatch.setattr(Session, "running", property(lambda session: session in running))
    start = max(api.last_active, tab.last_active)
    registry.reap(now=start + 121)
    assert registry.peek("api") is None, "an API client's paused run is reaped like an idle one"
    assert registry.peek("tab") is tab, "a person with the page open gets time to decide"
    registry.reap(now=start + 601)
    assert registry.peek("tab") is None
    working = registry.get("worker")
    running.add(working)  # running code, not paused: kept
    registry.reap(now=working.last_active + 601)
    assert registry.peek("worker") is working


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

    from gradio_client import Client
    from ui_testlib import code_reply, run_app, write_transcript

    transcript = write_transcript(tmp_path / "t.json", [code_reply("go", "x = 1\nfinal_answer(x)")])
    data = tmp_path / "data"
    data.mkdir()

    with run_app(transcript, data) as url:
        Client(url, verbose=False, download_files=False).predict({"text": "go", "files": []}, api_name="/run")
        app_pids = [int(e) for e in os.listdir("/proc") if e.isdigit() and _cmd_has(e, str(data))]
        children = [int(e) for e in os.listdir("/proc") if e.isdigit() and _parent(e) in app_pids
                    and _cmd_has(e, "_agentdeck_sandbox")]
        assert children, "the run started no sandbox worker"
    from tests.waiting import wait_until

    wait_until(lambda: not [pid for pid in children if os.path.exists(f"/proc/{pid}") and _state(pid) != "Z"],
               10, "the app's sandbox workers to end with it")


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


def test_a_message_that_starts_no_run_gives_its_sandbox_place_back(tmp_path: Path) -> None:
    """A run's sandbox place is promised at admission until its agent exists (at most two minutes). A message of
    files that are all refused (or an agent that cannot start) builds no agent: the promise stayed, so one visitor
    sending such messages from fresh sessions (10 a minute) held every place and everyone was told the server
    is busy."""
    from ui_testlib import code_reply, form, write_transcript

    from ui.app import AgentDeckApp
    from ui.settings import AppConfig

    transcript = write_transcript(tmp_path / "t.json", [code_reply("done", "final_answer(1)")])
    config = AppConfig(model=f"replay:{transcript}", data_dir=tmp_path / "data", min_free_mb=0, max_sandboxes=2,
                       runs_per_minute=100, visitor_disk_mb=0)
    app = AgentDeckApp(config)
    refused = tmp_path / "tool.exe"
    refused.write_bytes(b"MZ")
    settings = form(config.model)

    def request(key: str, host: str) -> object:
        return type("R", (), {"session_hash": key, "headers": {}, "client": type("C", (), {"host": host})(),
                              "username": None})()

    try:
        for n in range(3):
            list(app.run({"text": "", "files": [{"path": str(refused), "orig_name": "tool.exe"}]},
                         request(f"flood-{n}", "198.51.100.7"), **settings))
        list(app.run({"text": "hello", "files": []}, request("theirs", "203.0.113.5"), **settings))
        assert app.registry.peek("theirs").agent is not None
    finally:
        app.registry.shutdown()


def test_an_ipv6_visitor_is_counted_by_its_64_network(monkeypatch) -> None:
    """A single line or cloud machine holds a whole /64: rotating addresses in it gives no fresh limits."""
    monkeypatch.setenv("SYSTEM", "spaces")
    monkeypatch.setenv("SPACE_ID", "someone/demo")
    limiter = RunRateLimiter(per_minute=2)
    for n in range(2):
        request = type("R", (), {"headers": {"x-forwarded-for": f"2001:db8:1:2::{n + 1:x}"}, "client": None})()
        limiter.check(visitor_of(request), now=100.0)
    rotated = type("R", (), {"headers": {"x-forwarded-for": "2001:db8:1:2:ffff:1:2:3"}, "client": None})()
    with pytest.raises(RateLimitedError):
        limiter.check(visitor_of(rotated), now=100.5)
    neighbour = type("R", (), {"headers": {"x-forwarded-for": "2001:db8:1:3::1"}, "client": None})()
    limiter.check(visitor_of(neighbour), now=100.5)  # another /64 is another visitor
    assert visitor_of(type("R", (), {"headers": {"x-forwarded-for": "::ffff:6.6.6.6"}, "client": None})()) == "6.6.6.6"
    assert visitor_of(_Req()) == "10.0.0.9"


@pytest.mark.slow
def test_runs_paused_for_a_decision_count_against_the_visitors_runs_at_once(tmp_path: Path) -> None:
    """A paused run ends its handler (no streaming place) but keeps its sandbox place: one visitor starting
    paused runs in fresh API sessions took every sandbox of the server. They count as the visitor's runs."""
    from gradio_client import Client
    from ui_testlib import code_reply, run_app, write_transcript

    transcript = write_transcript(tmp_path / "t.json", [code_reply("compute", "print(1)")] * 10)
    data = tmp_path / "data"
    data.mkdir()
    env = {"AGENTDECK_MAX_SANDBOXES": "3", "AGENTDECK_TRUST_FORWARDED": "1"}

    def paused_run(url: str, address: str) -> None:
        client = Client(url, verbose=False, download_files=False, headers={"X-Forwarded-For": address})
        client.predict({"text": "hi", "files": []}, **form(f"replay:{transcript}", imports="pandas"),
                       approval_mode="approve_code", api_name="/run")

    with run_app(transcript, data, extra_env=env) as url:
        paused_run(url, "203.0.113.7")
        paused_run(url, "203.0.113.7")
        with pytest.raises(Exception, match="Too many runs at once"):
            paused_run(url, "203.0.113.7")
        paused_run(url, "198.51.100.1")  # the server still has a place for someone else


@pytest.mark.slow
def test_reopening_a_chat_reruns_its_code_only_within_the_visitors_run_limits(tmp_path: Path) -> None:
    """Opening a chat re-runs its code steps (each up to the execution time limit) in the queue runs share:
    from many fresh API sessions at once, one visitor took every run place and the CPU. Each rebuild counts as
    a run of the visitor's; past the limits the chat opens at once and is rebuilt with its next message."""
    import json

    from gradio_client import Client
    from ui_testlib import code_reply, run_app, write_transcript

    from ui.saved.store import new_token

    transcript = write_transcript(tmp_path / "t.json", [code_reply("compute", "x = 41 + 1\nprint(x)"),
                                                        code_reply("done", "final_answer(x)")])
    data = tmp_path / "data"
    data.mkdir()
    token = new_token()
    settings = form(f"replay:{transcript}", imports="pandas")
    with run_app(transcript, data, extra_env={"AGENTDECK_RUNS_PER_MINUTE": "3"}) as url:
        first = Client(url, verbose=False, download_files=False)
        first.predict({"token": token}, **settings, api_name="/browser_session")
        first.predict({"text": "compute", "files": []}, **settings, approval_mode="autonomous",
                      api_name="/run")  # run 1 of 3
        notes = []
        for _ in range(3):  # a page load (here from a fresh API session) reopens the chat the browser had open
            opened = Client(url, verbose=False, download_files=False).predict(
                {"token": token}, **settings, api_name="/browser_session")
            notes.append(json.dumps(opened))
    assert ["rebuilt with your next message" in n for n in notes] == [False, False, True], notes
    assert all("Chat restored" in n for n in notes[:2])


def test_live_sessions_have_a_cap_and_the_longest_idle_go_first(tmp_path: Path, monkeypatch) -> None:
    """Any request with a new session hash makes a session (~0.3 MB and a folder): a visitor looping over the API
    could grow the process until it runs out of memory. Past max_sessions the longest idle ones without a run go,
    those no page holds first; a running one stays."""
    from ui.session import registry as registry_module
    from ui.session.session import Session

    presence = PagePresence()
    registry = SessionRegistry(tmp_path, agent_factory=lambda s, w: None, presence=presence, max_sessions=3)
    running: set = set()
    monkeypatch.setattr(Session, "running", property(lambda session: session in running))
    busy, paged = registry.get("busy"), registry.get("paged")
    registry.get("idle")
    running.add(busy)
    presence.opened("paged")
    registry.get("new-1")  # the cap: the idle one without a page goes
    assert registry.peek("idle") is None and registry.peek("paged") is paged and registry.peek("busy") is busy
    registry.get("new-2")  # then the longest idle without a page, before the one a page holds
    assert registry.peek("new-1") is None and registry.peek("paged") is paged
    presence.opened("new-2")
    registry.get("new-3")  # every idle one has a page: the longest idle goes
    assert registry.peek("paged") is None and registry.peek("new-2") is not None
    assert registry.peek("busy") is busy and len(registry) == 3  # a run is never closed for room
    monkeypatch.setattr(registry_module, "MAX_EXPIRED_KEYS", 2)
    for n in range(5):
        registry.get(f"extra-{n}")
    assert len(registry._expired_keys) == 2  # made-up keys are remembered up to a bound


def test_a_visitor_past_the_session_cap_closes_its_own_sessions_not_anyone_elses(tmp_path: Path) -> None:
    """Session hashes and the heartbeat streams that mark a page are the client's to make: a visitor making
    sessions past the cap, each with a page, closed everyone else's idle sessions (variables, the open chat), the
    longest idle first. Past the cap, the visitor holding the most live sessions loses its own."""
    presence = PagePresence()
    registry = SessionRegistry(tmp_path, agent_factory=lambda s, w: None, presence=presence, max_sessions=4)
    theirs = registry.get("theirs", visitor="203.0.113.5")
    presence.opened("theirs")
    for n in range(12):
        registry.get(f"flood-{n}", visitor="198.51.100.7")
        presence.opened(f"flood-{n}")
    assert registry.peek("theirs") is theirs
    assert len(registry) == 4 and registry.peek("flood-11") is not None
    newcomer = registry.get("newcomer", visitor="192.0.2.1")  # room for someone new: the flood's oldest goes
    assert registry.peek("theirs") is theirs and registry.peek("newcomer") is newcomer
    assert registry.peek("flood-9") is None and len(registry) == 4


def test_a_page_load_that_never_sent_a_message_leaves_no_folder_behind(tmp_path: Path) -> None:
    """Every page load, and every API call from a fresh client, makes an owner and a chat folder: a chat that
    never got a message is removed with its session, and its owner's folder with it when nothing else is there."""
    from ui.saved.store import ChatStore, new_token

    store = ChatStore(tmp_path)
    registry = SessionRegistry(tmp_path, agent_factory=lambda s, w: None, grace_s=0)
    owner = store.owner_for_token(new_token())
    registry.install("api-client", store.create(owner))
    assert (tmp_path / "owners" / owner).is_dir()
    registry.close("api-client")
    registry.reap()
    assert not (tmp_path / "owners" / owner).exists()
    kept_owner = store.owner_for_token(new_token())
    store.set_approval_mode(kept_owner, "all")  # an owner's own choice keeps its folder
    registry.install("tab", store.create(kept_owner))
    registry.close("tab")
    registry.reap()
    assert (tmp_path / "owners" / kept_owner / "approval_mode").exists()
    store.create(store.owner_for_token(new_token()))  # left behind by a crash: swept at start
    store.sweep_unused(older_than_s=0, now=10**10)
    assert sorted(p.name for p in (tmp_path / "owners").iterdir()) == [kept_owner]


def test_a_new_run_ends_the_visitors_paused_runs_no_page_holds_and_no_more(tmp_path: Path) -> None:
    """Browsers closed while their approval panel showed leave paused runs no page shows (kept for a reload's
    reattach): a fresh browser of the same address had its first message refused as "too many runs at once",
    with no run it could answer or stop (issue 31). A new run ends the visitor's oldest such run instead; one
    whose page is open, and another visitor's, are never ended, and the visitor's paused runs stay at
    `runs_at_once` (the protection against taking every sandbox with paused runs)."""
    from ui_testlib import code_reply, write_transcript

    from ui.app import AgentDeckApp
    from ui.settings import AppConfig

    transcript = write_transcript(tmp_path / "t.json", [code_reply("compute", "print(1)")])
    config = AppConfig(model=f"replay:{transcript}", data_dir=tmp_path / "data", min_free_mb=0, runs_per_minute=100,
                       runs_at_once=2, visitor_disk_mb=0)
    app = AgentDeckApp(config)
    settings = form(config.model)

    def request(key: str, host: str) -> object:
        return type("R", (), {"session_hash": key, "headers": {}, "client": type("C", (), {"host": host})(),
                              "username": None})()

    def paused_run(key: str, host: str = "198.51.100.7") -> None:
        list(app.run({"text": "hi", "files": []}, request(key, host), approval_mode="approve_code", **settings))
        assert app.registry.peek(key).has_pending()

    def paused() -> set[str]:
        return {s.key for s in app.registry.sessions() if s.has_pending()}

    try:
        paused_run("theirs", "203.0.113.5")
        app.on_unload(request("theirs", "203.0.113.5"))  # another visitor's page is gone: never ended for ours
        paused_run("open")
        paused_run("closed")
        app.on_unload(request("closed", "198.51.100.7"))
        paused_run("fresh")  # refused before the fix
        assert paused() == {"theirs", "open", "fresh"}
        with pytest.raises(Exception, match="Too many runs at once"):
            paused_run("another")  # both of the visitor's paused runs have a page
        assert paused() == {"theirs", "open", "fresh"}
    finally:
        app.registry.shutdown()
