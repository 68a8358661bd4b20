"""A page's events wait for its load (which binds the tab to its owner), never more than once per tab, and a
visitor cannot park the server's run threads in that wait (the tab key is theirs to choose)."""
from __future__ import annotations

import threading
from pathlib import Path

from tests.waiting import wait_until
from ui.saved import owners as owners_module
from ui.saved.owners import TabOwners
from ui.saved.store import ChatStore


def waiter(owners: TabOwners, key: str, timeout: float = 30.0) -> tuple[threading.Thread, list[bool]]:
    outcome: list[bool] = []
    thread = threading.Thread(target=lambda: outcome.append(owners.wait_loaded(key, timeout=timeout)), daemon=True)
    thread.start()
    return thread, outcome


def test_an_event_waits_for_its_pages_load_and_goes_on_when_it_ends(tmp_path: Path) -> None:
    owners = TabOwners(ChatStore(tmp_path))
    thread, outcome = waiter(owners, "tab")
    wait_until(lambda: owners._waiting == 1, what="the event waiting")
    assert not outcome  # still waiting: the load has not run
    owners.mark_loaded("tab")
    thread.join(10)
    assert outcome == [True]
    assert owners.wait_loaded("tab", timeout=30.0) is True  # loaded: no wait


def test_a_tab_whose_load_never_comes_waits_only_once(tmp_path: Path) -> None:
    owners = TabOwners(ChatStore(tmp_path))
    assert owners.wait_loaded("restarted-server-tab", timeout=0.05) is False  # timed out
    thread, outcome = waiter(owners, "restarted-server-tab")  # a 30 s wait, were it to wait again
    thread.join(10)
    assert outcome == [False]
    assert owners.wait_loaded("another-tab", timeout=0.0) is False  # other tabs are unaffected


def test_events_beyond_the_waiting_limit_go_on_at_once(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(owners_module, "MAX_WAITING", 2)
    owners = TabOwners(ChatStore(tmp_path))
    parked = [waiter(owners, f"made-up-{i}") for i in range(2)]
    wait_until(lambda: owners._waiting == 2, what="two events waiting")
    thread, outcome = waiter(owners, "made-up-3")  # would wait 30 s
    thread.join(10)
    assert outcome == [False] and owners._waiting == 2
    for i, (thread, outcome) in enumerate(parked):
        owners.mark_loaded(f"made-up-{i}")
        thread.join(10)
        assert outcome == [True]


def test_tabs_that_never_loaded_are_remembered_up_to_a_bound(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(owners_module, "MAX_GIVEN_UP", 3)
    owners = TabOwners(ChatStore(tmp_path))
    for i in range(5):
        owners.wait_loaded(f"never-{i}", timeout=0.0)
    assert list(owners._given_up) == ["never-2", "never-3", "never-4"]


def test_a_closed_tab_is_forgotten_with_its_load(tmp_path: Path) -> None:
    owners = TabOwners(ChatStore(tmp_path))
    owners.mark_loaded("tab")

    class Request:
        session_hash = "tab"

    owners.forget(Request())
    assert owners.wait_loaded("tab", timeout=0.0) is False


def test_tabs_that_never_unload_are_remembered_up_to_a_bound(tmp_path: Path, monkeypatch) -> None:
    """An API client never unloads, and every call from a fresh client is a tab: their owners and loads are
    remembered up to a bound, the tabs bound longest ago forgotten first."""
    monkeypatch.setattr(owners_module, "MAX_TABS", 3)
    owners = TabOwners(ChatStore(tmp_path))
    for i in range(5):
        owners.bind(f"api-{i}", f"owner-{i}")
        owners.mark_loaded(f"api-{i}")
    owners.bind("api-2", "owner-2")  # bound again: the newest
    assert [owners.owner_of(f"api-{i}") for i in range(5)] == [None, None, "owner-2", "owner-3", "owner-4"]
    assert list(owners._loaded) == ["api-2", "api-3", "api-4"]
