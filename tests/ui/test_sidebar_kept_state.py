"""What the page keeps when the chat it shows changes, in-process: the approval mode the person chose survives a
reload, a reopened chat and a restart (and the session uses the mode the page shows), and the export box is
emptied when its chat is deleted or another chat is opened or started."""
from __future__ import annotations

import threading
from pathlib import Path

import gradio as gr
import pytest
from nothing_lost_harness import SET_X, LiveApp, Req, StallingModel, noting_load_waits, wait_until

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


def test_a_mode_chosen_while_the_page_loads_is_kept_not_undone_by_the_load(tmp_path: Path) -> None:
    """The person picks a mode before the page's load has ended: the load shows the browser's saved mode, which
    must not win. The choice waits for the load (as a message does), then is this browser's mode: the session
    uses it and a reload shows it (the page itself shows it again after the load: `keep_choice_after`)."""
    live = LiveApp(tmp_path, StallingModel(["unused"]))
    token = new_token()
    try:
        owners = live.app.services.owners
        waiting = noting_load_waits(owners)
        from_page = gr.EventData(target=object(), _data={})  # a page's event names its component
        chosen = threading.Thread(target=lambda: ApprovalHandlers(live.app.services).set_mode(
            "approve_code", 0, 6, Req("tab"), from_page), daemon=True)
        chosen.start()
        wait_until(lambda: waiting.is_set() or not chosen.is_alive(), what="the choice reaching the server")
        assert live.load(token, key="tab")[MODE] == "autonomous"  # the load shows the saved mode (none yet)
        chosen.join(timeout=30)
        assert not chosen.is_alive()
        assert live.session("tab").approval_mode == "approve_code"  # after the load: the person's choice
        assert live.load(token, key="reloaded")[MODE] == "approve_code"  # kept for this browser
    finally:
        live.close()
