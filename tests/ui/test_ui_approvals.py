"""Human in the loop in the app: plan review, code and tool-call approval, ask_user, reload, Stop.

Most tests call the app's handlers in-process (a replay model, the real sandbox) so they can look at what the
model was sent (`session.agent.model.calls`); one drives a running app over HTTP with gradio_client.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ui_testlib import MAIL_TOOLS, Req, code_reply, run_app, write_transcript
from ui_testlib import form as settings_form

from ui import tool_offer
from ui.app import AgentDeckApp
from ui.panels.approval_panel import VIEW_KEYS
from ui.panels.approvals import ApprovalHandlers
from ui.settings import AppConfig


class Harness:
    def __init__(self, tmp_path: Path, replies: list[str], planning: int = 0, tools: tuple[str, ...] = ()) -> None:
        transcript = write_transcript(tmp_path / "script.json", replies)
        self.config = AppConfig(model=f"replay:{transcript}", data_dir=tmp_path / "data", authorized_imports=(),
                                max_steps=6)
        self.app = AgentDeckApp(self.config)
        self.handlers = ApprovalHandlers(self.app.services)
        self.req = Req("tab-1")
        self.planning = planning
        self.tools = list(tools)

    @property
    def session(self):
        return self.app.session_for(self.req)

    def set_mode(self, mode: str) -> tuple:
        """Choose a mode as the page does: a planning interval the handler sends back lands in the form."""
        planning, note = self.handlers.set_mode(mode, self.planning, 6, self.req)
        if isinstance(planning, int):
            self.planning = planning
        return planning, note

    def send(self, text: str, mode: str | None = None) -> list[tuple]:
        return list(self.app.run({"text": text, "files": []}, self.req, mode,
                                 **settings_form(self.config.model, planning_interval=self.planning, tools=self.tools)))

    def view(self, shown: str | None = None) -> dict[str, Any]:
        return dict(zip(VIEW_KEYS, self.handlers.refresh(shown, self.req), strict=True))

    def decide(self, name: str, *args: Any) -> dict[str, Any]:
        """Press a panel button (approve / reject / continue_plan) as the page would, then stream the rest."""
        shown = self.view()["request_id"]
        result = dict(zip(VIEW_KEYS, getattr(self.handlers, name)(shown, *args, self.req), strict=True))
        if not _visible(result["panel"]):
            list(self.handlers.resume(self.req))
        return result

    def chat(self) -> str:
        messages = self.session.record.transcript.messages()
        return "\n".join(f"{(m.get('metadata') or {}).get('title', '')}\n{m['content']}" for m in messages)

    def model_calls(self) -> list[list[dict]]:
        return self.session.agent.model.calls

    def last_input(self) -> str:
        return "\n".join(str(m["content"]) for m in self.model_calls()[-1])

    def close(self) -> None:
        self.app.registry.shutdown()


def _visible(update: Any) -> bool:
    return isinstance(update, dict) and update.get("visible") is True


def _value(update: Any) -> Any:
    return update.get("value") if isinstance(update, dict) else None


@pytest.fixture
def harness(tmp_path: Path):
    made: list[Harness] = []

    def make(replies: list[str], **kwargs: Any) -> Harness:
        made.append(Harness(tmp_path, replies, **kwargs))
        return made[-1]

    yield make
    for h in made:
        h.close()


def test_edited_plan_reaches_the_model(harness) -> None:
    h = harness(["1. Look at the data.\n2. Answer.<end_plan>", code_reply("Go.", "final_answer('planned')")])
    planning, note = h.set_mode("review_plans")
    assert planning == {"__type__": "update"} and "plans once" in note  # the setting stays 0; the mode plans
    h.send("Make a plan first")
    view = h.view()
    assert _visible(view["panel"]) and _visible(view["plan_box"]) and not _visible(view["card"])
    assert _value(view["plan_editor"]) == "1. Look at the data.\n2. Answer."
    assert "🧭 Plan · ✋ waiting for you" in h.chat() and "waiting for your decision (plan)" in \
        h.session.record.transcript.status_text()
    after = h.decide("continue_plan", "1. Use the EDITED approach.\n2. Answer.")
    assert not _visible(after["panel"])
    assert h.session.record.transcript.finished.state == "success"
    prompt = "\n".join(str(m["content"]) for m in h.model_calls()[1])
    assert "EDITED approach" in prompt and "Look at the data" not in prompt
    assert h.session.agent.memory.latest_plan().plan.startswith("1. Use the EDITED approach")
    chat = h.chat()
    assert "✋ Decision: edit" in chat and "Your edited plan" in chat and "planned" in chat
    assert "waiting for you" not in chat


def test_plan_review_leaves_the_planning_setting_alone_whatever_a_client_sends(harness) -> None:
    """The form's values come from the client: Gradio's slider lets NaN through, an API client can send anything.
    The mode never writes the planning interval (issue 31, item 5: it stayed on after leaving Review plans)."""
    h = harness([])
    for max_steps, planning in [(float("nan"), 0), ("many", None), (None, float("inf")), (80, "x"), (True, 0)]:
        interval, note = h.handlers.set_mode("review_plans", planning, max_steps, h.req)
        assert interval == {"__type__": "update"} and "plans once" in note
    assert h.handlers.set_mode("review_plans", 6, 3, h.req)[1] == ""  # planning already on: its own interval
    assert h.handlers.set_mode("autonomous", 0, 3, h.req) == ({"__type__": "update"}, "")


def test_review_plans_then_autonomous_makes_no_planning_call(harness) -> None:
    """Issue 31, item 5: Review plans plans once per run, and after switching back to Autonomous no run plans.
    The model's calls are counted: a planning call is the one sent the initial-plan prompt."""
    h = harness(["1. Add.\n2. Answer.<end_plan>", code_reply("Go.", "final_answer('planned')"),
                 code_reply("No plan.", "final_answer('unplanned')"),
                 code_reply("Still none.", "final_answer('unplanned again')")])
    h.set_mode("review_plans")
    h.send("First, with a plan")
    h.decide("continue_plan", "1. Add.\n2. Answer.")
    assert h.session.record.transcript.finished.output == "planned"
    agent = h.session.agent
    assert len(agent.model.calls) == 2  # the plan, then the step
    h.set_mode("autonomous")
    h.send("Second, no plan")
    h.send("Third, no plan")
    assert h.session.agent is agent and h.session.record.transcript.finished.output == "unplanned again"
    assert len(agent.model.calls) == 4, "a run after Review plans made a planning call"
    assert [s.step_type for s in agent.memory.steps].count("planning") == 1


def test_rejected_plan_tells_the_model_why(harness) -> None:
    h = harness(["1. Delete the old files.\n2. Answer.<end_plan>",
                 code_reply("The person said no; keep the files.", "final_answer('kept everything')")])
    h.set_mode("review_plans")
    h.send("Tidy up the workspace")
    view = h.view()
    assert _visible(view["plan_box"]) and _value(view["plan_reject_reason"]) == ""  # a fresh reason box
    after = h.decide("reject", "Never delete files; list them instead.")
    assert not _visible(after["panel"])
    assert h.session.record.transcript.finished.state == "success"
    prompt = "\n".join(str(m["content"]) for m in h.model_calls()[1])
    assert "Never delete files; list them instead." in prompt  # the reason reached the model
    chat = h.chat()
    assert "✋ Decision: reject" in chat and "**Reason:** Never delete files; list them instead." in chat
    assert "kept everything" in chat


def test_code_approved_then_edited_code_runs(harness) -> None:
    h = harness([code_reply("First.", "print('first step ran')"),
                 code_reply("Second.", "print('original code ran')"),
                 code_reply("Done.", "final_answer('all done')")])
    h.set_mode("approve_code")
    h.send("Run two steps")
    view = h.view()
    assert _visible(view["card"]) and _visible(view["edit_code"]) and not _visible(view["edit_args"])
    assert _value(view["edit_code"]) == "print('first step ran')"
    assert "Step 1 · ✋ waiting for you" in h.chat()
    assert "first step ran\n" not in h.chat()  # nothing ran before the approval
    # What waits for the person turns no spinner (it said the agent was at work), and shows open.
    waiting = [m["metadata"] for m in h.session.record.transcript.messages()
               if "waiting" in (m.get("metadata") or {}).get("title", "").lower()]
    assert len(waiting) == 2 and all(meta.get("status") is None for meta in waiting), waiting

    # A new message while the code waits is not a new task.
    calls_before = len(h.model_calls())
    h.send("hello?")
    assert "waiting for your decision in the panel" in h.chat() and len(h.model_calls()) == calls_before
    assert _visible(h.view()["card"])

    h.decide("approve", "print('first step ran')\n", "")  # unchanged (a trailing newline is not an edit)
    assert "✋ Decision: approve" in h.chat() and "first step ran" in h.chat()
    assert _value(h.view()["edit_code"]) == "print('original code ran')"
    h.decide("approve", "print('edited code ran')", "")
    h.decide("approve", "final_answer('all done')", "")
    chat = h.chat()
    assert "✋ Decision: edit" in chat and "Your edited code" in chat
    assert "edited code ran" in chat and "original code ran\n" not in chat.split("Your edited code")[1]
    steps = list(h.session.agent.memory.action_steps())
    assert steps[1].code == "print('edited code ran')" and steps[1].logs == "edited code ran\n"
    assert h.session.record.transcript.finished.output == "all done"
    assert not _visible(h.view()["panel"])


def test_a_decisions_time_counts_from_its_panels_first_showing(harness) -> None:
    """Issue 31 review: the chat said 3.4 s for 2.0 s between the panel showing and the click; it counted from the
    agent's request (before the run's end reached the page) to the resumed run reaching it. The panel's refresh
    marks the request shown (the first showing stays), the click is when the decision is made, and the chat shows
    the wait the decision recorded: all read from the records, no clock needed."""
    h = harness([code_reply("Go.", "final_answer('ran')")])
    h.set_mode("approve_code")
    h.send("Run it")
    pending = h.session.agent.memory.pending
    assert pending.shown_at == 0.0  # asked, not shown yet
    shown_id = h.view()["request_id"]
    shown_at = pending.shown_at
    assert shown_at >= pending.asked_at > 0
    h.view(shown_id)  # a later refresh (another tab's alike) keeps the first showing
    assert pending.shown_at == shown_at
    h.decide("approve", "final_answer('ran')", "")
    record = next(s for s in h.session.agent.memory.action_steps() if s.decisions).decisions[0]
    assert record["asked_at"] == pending.asked_at and record["shown_at"] == shown_at  # the request's time as it was
    assert record["decided_at"] == pending.taken_at  # the click's, not the resumed run's
    assert record["waited_s"] == record["decided_at"] - shown_at
    decision = next(m for m in h.session.record.transcript.messages()
                    if (m.get("metadata") or {}).get("title") == "✋ Decision: approve")
    assert decision["metadata"]["duration"] == round(record["waited_s"], 2)


def test_tool_call_bad_json_then_rejected_with_reason(harness, tmp_path: Path, monkeypatch) -> None:
    tools_file = tmp_path / "mail_tools.py"
    tools_file.write_text(MAIL_TOOLS)
    monkeypatch.setenv("AGENTDECK_TOOLS_PATH", str(tools_file))
    monkeypatch.setattr(tool_offer, "_TOOL_CACHE", None)  # load the registry again, with the user's tool
    outbox = tmp_path / "outbox.txt"
    h = harness([code_reply("Send it.", "print(send_email(to='eve@example.com', body='hi'))"),
                 code_reply("Try again.", "print(send_email(to='eve@example.com', body='hi again'))"),
                 code_reply("Done.", "final_answer('mail handled')")], tools=("send_email",))
    h.set_mode("approve_tools")
    h.send("Email Eve")
    view = h.view()
    assert _visible(view["card"]) and _visible(view["edit_args"]) and not _visible(view["edit_code"])
    assert "send_email" in _value(view["tool_name"])
    assert json.loads(_value(view["edit_args"])) == {"to": "eve@example.com", "body": "hi"}
    assert "✋ Waiting for your decision: call send_email?" in h.chat()
    # The panel lists the arguments in the chat's order (a review found them sorted in one, given in the other):
    # sorted in both, as the saved chat keeps them, so a reopened chat shows that order too.
    shown, chat = _value(view["edit_args"]), h.chat().split("The agent wants to call", 1)[1]
    assert shown.index('"body"') < shown.index('"to"') and chat.index('"body": "hi"') < chat.index('"to": "eve@')

    # Invalid JSON: a clear message, the decision stays pending, the boxes are left as they are.
    bad = h.decide("approve", "", '{"to": "bob@example.com", body: }')
    assert "not valid JSON" in _value(bad["message"]) and _visible(bad["panel"])
    assert bad["edit_args"] == {"__type__": "update"}  # skipped: the person's text stays
    assert "not sent" not in h.chat() and len(h.model_calls()) == 1
    not_object = h.decide("approve", "", '["bob@example.com"]')
    assert "must be a JSON object" in _value(not_object["message"])
    assert h.session.pending_request().request_kind == "tool_call"  # still waiting (the run ended there)
    assert h.session.agent.memory.pending.kind == "tool_call" and not h.session.agent.pending_decisions()

    h.decide("reject", "wrong recipient: use bob@example.com")
    assert "wrong recipient" in h.last_input()  # the next step's input carries the reason
    assert "🚫 send_email: you rejected this call" in h.chat() and "**Reason:** wrong recipient" in h.chat()
    assert "Reason: wrong recipient: use bob@example.com" in h.chat() and "send_email failed" not in h.chat()
    assert not outbox.exists()

    # The second call is approved with edited arguments: the tool runs with them.
    h.decide("approve", "", json.dumps({"to": "bob@example.com", "body": "hi again"}))
    assert outbox.read_text() == "bob@example.com: hi again\n"
    assert "sent to bob@example.com" in h.chat() and "Your edited arguments" in h.chat()
    assert h.session.record.transcript.finished.output == "mail handled"


def test_ask_user_question_is_answered_by_the_next_message(harness) -> None:
    h = harness([code_reply("Ask.", "colour = ask_user('Which colour should the chart be?')\n"
                                    "print('colour is', colour)"),
                 code_reply("Done.", "final_answer(f'a {colour} chart')")])
    h.send("Make me a chart")  # autonomous: questions still wait for the person
    view = h.view()
    assert _visible(view["question_box"]) and not _visible(view["card"])
    assert "Which colour" in _value(view["question_text"])
    assert view["task_input"]["placeholder"].startswith("Answer the agent's question")
    assert "❓ **The agent asks:** Which colour should the chart be?" in h.chat()
    h.send("blue")
    assert "blue" in "\n".join(str(m["content"]) for m in h.model_calls()[1])
    assert "colour is blue" in h.chat() and h.session.record.transcript.finished.output == "a blue chart"
    assert [m["content"] for m in h.session.record.transcript.messages() if m["role"] == "user"] == \
        ["Make me a chart", "blue"]
    assert h.view()["task_input"]["placeholder"].startswith("Type a task")


def test_reload_keeps_the_pending_decision(harness) -> None:
    h = harness([code_reply("Run.", "print('after reload')"), code_reply("Done.", "final_answer('resumed')")])
    token = h.handlers.restore("", "autonomous", h.req)[0]  # the page load hands the tab its token
    h.send("Run something", mode="approve_code")  # the mode comes with the message (the dropdown's value)
    old = h.session
    h.app.on_unload(h.req)  # the tab reloads: the session waits for it instead of closing
    assert h.app.registry.peek("tab-1") is old and old.closed_at is None

    # The reloaded tab (a new session hash) brings its token and gets the session, chat and panel back.
    h.req = Req("tab-1-reloaded")
    restored = h.handlers.restore(token, "autonomous", h.req)
    assert restored[0] == token and h.app.registry.peek("tab-1") is None and h.session is old
    assert "Step 1 · ✋ waiting for you" in json.dumps(restored[1], ensure_ascii=False)
    assert restored[4] == "approve_code"
    view = dict(zip(VIEW_KEYS, restored[5:], strict=True))
    assert _visible(view["card"]) and _value(view["edit_code"]) == "print('after reload')"
    h.decide("approve", "print('after reload')", "")
    h.decide("approve", "final_answer('resumed')", "")
    assert "after reload" in h.chat() and old.record.transcript.finished.output == "resumed"

    # A made-up token gets a new one and nothing else; an idle session is closed on unload as before.
    other = h.handlers.restore("made-up-token", "autonomous", Req("tab-2"))
    assert other[0] not in (token, "made-up-token")
    assert not _visible(dict(zip(VIEW_KEYS, other[5:], strict=True))["panel"])
    h.app.on_unload(h.req)
    assert h.app.registry.peek("tab-1-reloaded") is None and old.closed_at is not None
    again = h.handlers.restore(token, "autonomous", Req("tab-1-reloaded-twice"))
    assert again[1] == {"__type__": "update"} and h.app.registry.peek("tab-1-reloaded-twice") is None


def test_stop_while_waiting_ends_the_run(harness) -> None:
    h = harness([code_reply("Risky.", "print('should not run')"), code_reply("Next.", "final_answer('still usable')")])
    h.set_mode("approve_code")
    h.send("Do something risky")
    assert _visible(h.view()["card"])
    h.app.stop(h.req)
    list(h.handlers.resume(h.req))  # the page chains this after Stop
    assert h.session.record.transcript.finished.state == "interrupted" and "Stopped" in h.chat()
    assert "should not run\n" not in h.chat() and not _visible(h.view()["panel"])
    h.set_mode("autonomous")  # applies to the same agent (same memory), no new agent
    agent = h.session.agent
    h.send("carry on")
    assert h.session.agent is agent and h.session.record.transcript.finished.output == "still usable"


def test_mode_changes_apply_to_the_next_run_of_the_same_agent(harness) -> None:
    h = harness([code_reply("One.", "final_answer('first')"), code_reply("Two.", "final_answer('second')")])
    h.send("first task")
    agent = h.session.agent
    assert h.session.record.transcript.finished.output == "first" and not agent.broker.policy.approve_code
    h.set_mode("approve_code")
    assert agent.broker.policy.approve_code  # switched between runs, memory kept
    h.send("second task")
    assert h.session.agent is agent and _visible(h.view()["card"])
    stale = h.handlers.approve("some-old-id", "final_answer('second')", "", h.req)
    assert "already made or has expired" in _value(dict(zip(VIEW_KEYS, stale, strict=True))["message"])
    h.handlers.approve(None, "final_answer('second')", "", h.req)
    double_click = h.handlers.approve(None, "final_answer('second')", "", h.req)
    twice = dict(zip(VIEW_KEYS, double_click, strict=True))
    assert "already made" in _value(twice["message"]) and not _visible(twice["panel"])
    list(h.handlers.resume(h.req))
    assert h.session.record.transcript.finished.output == "second"
    assert h.session.pending_request() is None


@pytest.mark.slow
def test_code_approval_over_the_http_api(tmp_path: Path) -> None:
    """The endpoints a page (or a script) uses: /set_approval_mode, /run, /approve, /resume."""
    from gradio_client import Client

    transcript = write_transcript(tmp_path / "api.json", [code_reply("Run.", "print('original')"),
                                                          code_reply("Done.", "final_answer('api done')")])
    (tmp_path / "data").mkdir()
    with run_app(transcript, tmp_path / "data") as url:
        client = Client(url, verbose=False, download_files=False)
        _, note = client.predict("review_plans", 0, 6, api_name="/set_approval_mode")
        assert "plans once" in note
        # The mode travels with each message (the dropdown's value); a script passes it by name.
        chat = client.predict({"text": "go", "files": []}, approval_mode="approve_code", api_name="/run")[0]
        assert "waiting for you" in json.dumps(chat, ensure_ascii=False)
        view = client.predict("print('edited over http')", "", api_name="/approve")
        # The API leaves out the request id (state) and the panel's layout columns.
        api_outputs = [k for k in VIEW_KEYS if k not in ("request_id", "panel", "plan_box", "card", "question_box")]
        message = api_outputs.index("message")
        assert view[message] == {"__type__": "update", "value": "", "visible": False}  # no complaint
        chat = client.predict(api_name="/resume")[0]
        text = json.dumps(chat, ensure_ascii=False)
        assert "edited over http" in text and "✋ Decision: edit" in text
        client.predict("final_answer('api done')", "", api_name="/approve")
        chat = client.predict(api_name="/resume")[0]
        assert "api done" in json.dumps(chat)


def test_every_run_streamed_to_a_tab_that_took_it_ends_with_the_panel_shown(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Each event streaming a run handed to a tab (`RunStreamer.reattach`: after the page load, after the reload's
    restore, after a chat opened or taken over) is followed by the approval panel's refresh: the run it streams
    can end at a decision. The page load's reattach and the restore's race for one hand-over, and when the
    restore's won, the tab showed "approve or reject (in the panel below the chat)" over no panel (issue 31)."""
    from ui.layout import build_blocks
    monkeypatch.setenv("AGENTDECK_SECRET", "r" * 40)
    demo = build_blocks(AgentDeckApp(AppConfig(model="embedded", data_dir=tmp_path / "data")))
    reattaching = [i for i, fn in demo.fns.items() if getattr(fn.fn, "__qualname__", "") == "RunStreamer.reattach"]
    refreshed_after = {fn.trigger_after for fn in demo.fns.values()
                       if getattr(fn.fn, "__qualname__", "") == ApprovalHandlers.refresh.__qualname__}
    assert len(reattaching) >= 4  # the page load, the restore, a chat opened, a chat taken over
    assert [i for i in reattaching if i not in refreshed_after] == []
