"""A page's events wait for its load (which binds the tab to its owner), but never more than once per tab."""
from __future__ import annotations

import threading
from pathlib import Path

from tests.waiting import wait_until
from ui.saved.owners import TabOwners
from ui.saved.store import ChatStore


def test_an_event_waits_for_its_pages_load_and_goes_on_when_it_ends(tmp_path: Path) -> None:
    owners = TabOwners(ChatStore(tmp_path))
    outcome: list[bool] = []
    waiting = threading.Thread(target=lambda: outcome.append(owners.wait_loaded("tab", timeout=30.0)))
    waiting.start()
    wait_until(lambda: waiting.is_alive(), what="the event waiting")
    assert not outcome  # still waiting: the load has not run
    owners.mark_loaded("tab")
    waiting.join(10)
    assert outcome == [True]


def test_a_tab_whose_load_never_comes_waits_only_once(tmp_path: Path) -> None:
    owners = TabOwners(ChatStore(tmp_path))
    assert owners.wait_loaded("restarted-server-tab", timeout=0.05) is False  # timed out
    assert owners.wait_loaded("restarted-server-tab", timeout=30.0) is True  # at once: no second wait
    assert owners.wait_loaded("another-tab", timeout=0.0) is False  # other tabs are unaffected


def test_a_closed_tab_is_forgotten_with_its_load(tmp_path: Path) -> None:
    owners = TabOwners(ChatStore(tmp_path))
    owners.mark_loaded("tab")

    class Request:
        session_hash = "tab"

    owners.forget(Request())
    assert owners.wait_loaded("tab", timeout=0.0) is False
