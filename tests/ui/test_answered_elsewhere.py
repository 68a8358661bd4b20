"""A decision a tab shows, answered in another tab (ui/panels/answered_elsewhere.py), through the handlers the page
calls: the tick that finds it, the follow that shows the run, a late click that follows instead of saying "already
made", and this tab's own answer never taken for another's. (The browser tests: test_resumed_run_figures_browser.py,
across replicas test_answered_elsewhere_cluster_browser.py.)"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ui_testlib import Req, chat_text, code_reply, write_transcript
from ui_testlib import form as settings_form

from ui.app import AgentDeckApp
from ui.panels.approval_panel import VIEW_KEYS
from ui.panels.approvals import ApprovalHandlers
from ui.panels.history import HistoryController
from ui.saved.owners import tab_key
from ui.saved.store import new_token
from ui.session.watchers import Watch
from ui.settings import AppConfig

SCRIPT = [code_reply("Print a line.", "x = 6 * 7\nprint('the first step ran', x)"),
          code_reply("Answer.", "final_answer(f'x is {x}')")]
FIRST, SECOND = Req("first-tab"), Req("second-tab")


@pytest.fixture
def app(tmp_path: Path):  # type: ignore[no-untyped-def]
    transcript = write_transcript(tmp_path / "script.json", SCRIPT)
    config = AppConfig(model=f"replay:{transcript}", data_dir=tmp_path / "data", authorized_imports=(), max_steps=3)
    made = AgentDeckApp(config)
    yield made, config
    made.registry.shutdown()


def _as_view(values: tuple) -> dict[str, Any]:
    return dict(zip(VIEW_KEYS, values, strict=True))


def _paused_and_watched(app: AgentDeckApp, config: AppConfig) -> tuple[ApprovalHandlers, str]:
    """The first tab's run paused on its first code step; a second tab of the same person watches the chat (as
    ui/panels/history.py sets up for a tab opened on it). Returns the handlers and the shown request's id."""
    owner = {"token": new_token()}
    list(HistoryController(app.services).on_load(owner, FIRST, **settings_form(config.model)))
    list(app.run({"text": "Compute x.", "files": []}, FIRST, "approve_code", **settings_form(config.model)))
    session = app.session_for(FIRST)
    handlers = ApprovalHandlers(app.services)
    shown = _as_view(handlers.refresh(None, FIRST))["request_id"]
    assert isinstance(shown, str) and not session.running
    chat = session.record.saved
    app.registry.watchers.watch(tab_key(SECOND), Watch(session, chat.id, chat.owner))
    return handlers, shown


def _answer_in_the_second_tab(handlers: ApprovalHandlers, shown: str) -> None:
    answered = _as_view(handlers.approve(shown, "x = 6 * 7\nprint('the first step ran', x)", "", SECOND))
    assert answered["panel"] == {"__type__": "update", "visible": False}, answered["message"]
    list(handlers.resume(SECOND))  # the second tab's chain drains the resumed run: it pauses at the next step


def test_the_tick_of_the_tab_showing_it_finds_it_answered_and_follows_the_run(app) -> None:  # type: ignore[no-untyped-def]
    app, config = app
    handlers, shown = _paused_and_watched(app, config)
    elsewhere = handlers.elsewhere
    skipped = elsewhere.check(shown, FIRST)
    assert all(value == {"__type__": "update"} for value in skipped)  # nothing answered yet: nothing sent
    assert list(elsewhere.follow(FIRST)) == [({"__type__": "update"},) * 5]
    _answer_in_the_second_tab(handlers, shown)
    # The second tab answered: its own tick leaves it to its click's chain.
    assert all(value == {"__type__": "update"} for value in elsewhere.check(shown, SECOND))
    hidden = _as_view(elsewhere.check(shown, FIRST))
    assert hidden["panel"] == {"__type__": "update", "visible": False} and hidden["request_id"] is None
    updates = list(elsewhere.follow(FIRST))
    assert "the first step ran 42" in chat_text(updates[-1][0])
    again = _as_view(elsewhere.after(FIRST))  # the decision that waits now: the answer step's
    assert again["request_id"] not in (None, shown) and "final_answer" in str(again["edit_code"])
    # ... and the first tab answers that one as usual.
    done = _as_view(handlers.approve(again["request_id"], "final_answer(f'x is {x}')", "", FIRST))
    assert done["panel"] == {"__type__": "update", "visible": False}, done["message"]
    list(handlers.resume(FIRST))
    assert app.session_for(FIRST).record.transcript.finished.output == "x is 42"


def test_an_earlier_ticks_late_after_leaves_the_next_decision_to_the_tick_that_follows(app) -> None:  # type: ignore[no-untyped-def]
    """Found on a loaded machine (the browser test's flake): ticks' chains overlap, and an earlier tick's `after`
    ran once a later tick had found the decision made but before its follow: it took the refresh and showed no
    decision (the run still going), and the tab never showed the next decision."""
    app, config = app
    handlers, shown = _paused_and_watched(app, config)
    elsewhere = handlers.elsewhere
    answered = _as_view(handlers.approve(shown, "x = 6 * 7\nprint('the first step ran', x)", "", SECOND))
    assert answered["panel"] == {"__type__": "update", "visible": False}, answered["message"]
    assert app.session_for(FIRST).running  # resumed, not yet drained by the second tab's chain
    hidden = _as_view(elsewhere.check(shown, FIRST))
    assert hidden["panel"] == {"__type__": "update", "visible": False}
    late = elsewhere.after(FIRST)  # the earlier tick's chain ends now
    assert all(value == {"__type__": "update"} for value in late)
    list(handlers.resume(SECOND))  # the second tab's chain drains the run: it pauses at the next step
    assert "the first step ran 42" in chat_text(list(elsewhere.follow(FIRST))[-1][0])
    again = _as_view(elsewhere.after(FIRST))
    assert again["request_id"] not in (None, shown) and "final_answer" in str(again["edit_code"])


def test_a_late_click_on_the_answered_decision_follows_the_run_instead(app) -> None:  # type: ignore[no-untyped-def]
    app, config = app
    handlers, shown = _paused_and_watched(app, config)
    _answer_in_the_second_tab(handlers, shown)
    clicked = _as_view(handlers.approve(shown, "x = 6 * 7\nprint('the first step ran', x)", "", FIRST))
    # the run waits at its next decision: the panel shows it, and says what happened to the one clicked
    assert "maybe in another tab" in str(clicked["message"]) and "final_answer" in str(clicked["edit_code"])
    updates = list(handlers.resume(FIRST))  # the click's chain: the run as it is now, nothing run again
    assert "the first step ran 42" in chat_text(updates[-1][0])
    assert chat_text(app.session_for(FIRST).record.transcript.messages()).count("✋ Decision: approve") == 1
    assert "final_answer" in str(_as_view(handlers.refresh(None, FIRST))["edit_code"])


def test_a_second_click_of_the_tab_that_answered_still_says_already_made(app) -> None:  # type: ignore[no-untyped-def]
    app, config = app
    handlers, shown = _paused_and_watched(app, config)
    _answer_in_the_second_tab(handlers, shown)
    twice = _as_view(handlers.approve(shown, "x = 6 * 7\nprint('the first step ran', x)", "", SECOND))
    assert "already made" in str(twice["message"]), twice
