"""What the page keeps when the chat it shows changes, in-process: the approval mode the person chose survives a
reload, a reopened chat and a restart (and the session uses the mode the page shows), and the export box is
emptied when its chat is deleted or another chat is opened or started."""
from __future__ import annotations

from pathlib import Path

import pytest
from nothing_lost_harness import SET_X, LiveApp, Req, StallingModel

from ui.panels.approvals import ApprovalHandlers
from ui.saved.store import new_token

# The sidebar's view (ui/panels/history.py `_view`) ends with the approval mode and the export box, after the
# settings form: counted from the end, so a setting added to the form does not move them.
MODE, EXPORT = -2, -1


@pytest.fixture(autouse=True)
def _secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTDECK_SECRET", "m" * 40)


def choose_mode(live: LiveApp, mode: str, key: str) -> None:
    """The mode selector's input event, as the page sends it."""
    ApprovalHandlers(live.app.services).set_mode(mode, 0, 6, Req(key))


def test_the_chosen_mode_survives_a_reload_and_the_next_message_pauses(tmp_path: Path) -> None:
    live = LiveApp(tmp_path, StallingModel([SET_X]))
    token = new_token()
    try:
        assert live.load(token, key="first")[MODE] == "autonomous"  # the server's default before any choice
        choose_mode(live, "approve_code", key="first")
        shown = live.load(token, key="reloaded")[MODE]  # a reload is a new tab key for the same browser
        assert shown == "approve_code" and live.session("reloaded").approval_mode == "approve_code"
        live.run("Set x", key="reloaded", mode=shown)  # the message goes with the mode the page shows
        pending = live.session("reloaded").pending_request()
        assert pending is not None and pending.request_kind == "code"  # it waits for the person: nothing ran
        assert live.load(new_token(), key="another-browser")[MODE] == "autonomous"  # the choice is this browser's
    finally:
        live.close()


def test_the_mode_is_shown_again_for_a_reopened_chat_and_after_a_restart(tmp_path: Path) -> None:
    live = LiveApp(tmp_path, StallingModel(["unused"]))
    token = new_token()
    try:
        live.load(token)
        choose_mode(live, "all", key="tab")
        live.app.new_chat(Req("tab"))
        live.history.after_new_chat({"token": token}, Req("tab"))
        assert live.load(token)[MODE] == "all"
    finally:
        live.close()
    restarted = LiveApp(tmp_path, StallingModel(["unused"]))
    try:
        assert restarted.load(token, key="after-restart")[MODE] == "all"
        assert restarted.session("after-restart").approval_mode == "all"
    finally:
        restarted.close()


def test_deleting_opening_or_starting_a_chat_empties_the_export_box(tmp_path: Path) -> None:
    live = LiveApp(tmp_path, StallingModel([SET_X, SET_X]))
    token = new_token()
    state = {"token": token}
    try:
        live.load(token)
        live.run("First chat")
        first = live.session().record.saved.id
        live.app.new_chat(Req("tab"))
        assert live.history.after_new_chat(state, Req("tab"))[-1] is None  # New chat: the export box is emptied
        live.run("Second chat")
        second = live.session().record.saved.id
        assert live.exports.export_markdown(Req("tab"))  # the second chat's export is in the box
        opened = list(live.history.open_chat(state, first, Req("tab"), **live.form()))
        assert opened and all(view[EXPORT] is None for view in opened)  # another chat opened: emptied
        assert live.exports.export_markdown(Req("tab"))
        deleted = live.history.delete_chat(state, first, Req("tab"))  # the open chat, whose export is shown
        assert deleted[EXPORT] is None and live.session().record.saved.id not in (first, second)
    finally:
        live.close()
