"""A watching tab's decision panel against updates that land out of order (issue 31).

Gradio events finish in any order: an update computed before the watched run paused (the page load's panel refresh,
which found nothing waiting) can reach the page after the watch's stream showed the decision. The page then hid the
panel while every later update of the stream said "waiting for your decision" and left the panel as it was: the
browser test `test_a_tab_opened_while_an_approved_step_runs_shows_the_next_decision[kept-open]` waited 20 s for an
Approve that never came (1 of 27 loaded runs). Here the orderings are forced: the page is a dict the updates are
applied to, in the order a loaded server can deliver them.
"""
from __future__ import annotations

from typing import Any

import pytest
from test_pauses_hold_no_thread import app, open_page, send  # noqa: F401 (fixture)
from ui_testlib import Req
from ui_testlib import form as settings_form

from ui.panels import watch as watch_module
from ui.panels.approvals import ApprovalHandlers
from ui.panels.watch import PANEL_KEYS, RunWatch

WATCHING = Req("second-tab")


def apply(page: dict[str, Any], panel: tuple) -> None:
    """What the page keeps of the panel's updates: the request id shown, and whether the panel and its card show
    (a skipped update leaves them)."""
    updates = dict(zip(PANEL_KEYS, panel, strict=True))
    request_id = updates["request_id"]
    if not isinstance(request_id, dict):  # a State's value (gr.skip() is an update dict)
        page["request_id"] = request_id
    for key in ("panel", "card"):
        visible = updates[key].get("visible") if isinstance(updates[key], dict) else None
        if visible is not None:
            page[key] = visible


def shows(page: dict[str, Any], request_id: str) -> bool:
    return page == {"request_id": request_id, "panel": True, "card": True}


@pytest.fixture
def watched(app, monkeypatch):  # type: ignore[no-untyped-def]  # noqa: F811
    """(the app, the approval handlers, the running session, the refresh the watching tab's page load computed
    while the step ran, the watch's stream once the run paused at its next decision)."""
    app, config = app
    monkeypatch.setattr(watch_module, "POLL_S", 0.01)
    monkeypatch.setattr(watch_module, "QUIET_S", 0.05)
    req = Req("tab")
    open_page(app, config, req)
    send(app, config, req, "Set x", "autonomous")
    handlers = ApprovalHandlers(app.services)
    run = app.run({"text": "Use x", "files": []}, req, "approve_code", **settings_form(config.model))
    next(run)  # the run goes on; this tab watches it
    session = app.session_for(req)
    watch = RunWatch(app.services)
    watch.start(WATCHING.session_hash, session, "owner", session.record.saved.id)
    early = handlers.refresh(None, WATCHING)[:len(PANEL_KEYS)]  # computed while nothing waited
    for _ in run:  # the run pauses at the code step's decision
        pass
    assert session.pending_request() is not None
    follow = watch.follow("", WATCHING)
    yield app, handlers, session, early, follow
    follow.close()


def test_a_hide_computed_before_the_pause_and_landing_after_the_decision_is_undone(watched) -> None:  # type: ignore[no-untyped-def]
    """The stream shows the decision, then the page load's refresh, computed while the step ran, lands: the
    stream's next updates show the panel again (before: left hidden, the status saying waiting)."""
    _app, _handlers, session, early, follow = watched
    waiting = session.pending_request().request_id
    page: dict[str, Any] = {"request_id": None, "panel": False, "card": False}
    apply(page, next(follow)[5:])
    assert shows(page, waiting), page
    apply(page, early)  # the stale hide
    assert not page["panel"]
    for _ in range(5):  # a few of the stream's updates while the decision waits (its clock: every QUIET_S)
        update = next(follow)
        assert "waiting for your decision" in update[3]
        apply(page, update[5:])
    assert shows(page, waiting), page


def test_a_panel_shown_again_just_before_a_click_decided_it_is_hidden_after(watched) -> None:  # type: ignore[no-untyped-def]
    """The stream shows the panel again with each update while the decision waits; one computed just before
    Approve was clicked here can land after the click's own update hid the panel: the stream's next update hides
    it (the run goes on), so no Approve is left over the resumed run."""
    _app, handlers, session, _early, follow = watched
    waiting = session.pending_request()
    page: dict[str, Any] = {"request_id": None, "panel": False, "card": False}
    apply(page, next(follow)[5:])
    held = next(follow)[5:]  # computed while the decision waits, delivered late
    clicked = handlers.approve(waiting.request_id, waiting.payload["code"], "", WATCHING)[:len(PANEL_KEYS)]
    apply(page, clicked)
    assert not page["panel"], page
    apply(page, held)  # (it shows the panel again)
    apply(page, next(follow)[5:])
    assert not page["panel"] and page["request_id"] is None, page
