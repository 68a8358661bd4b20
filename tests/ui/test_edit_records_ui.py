"""Edits and rejections in the app's chat: what ran is shown as the person's version, each decision keeps its
reason or both versions, the model is told, and a reopened chat (a fresh app on the same data folder) shows
the decisions as the live chat did. In-process: the app's handlers, the replay model, the real sandbox."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ui_testlib import MAIL_TOOLS, Req, code_reply, text_of, write_transcript
from ui_testlib import form as settings_form

from agents import events as ev
from agents.models.base import TokenUsage
from ui.app import AgentDeckApp
from ui.chat.render import Transcript
from ui.panels.approval_panel import VIEW_KEYS
from ui.panels.approvals import ApprovalHandlers
from ui.panels.history import HistoryController
from ui.saved.store import new_token
from ui.session.workspace_access import DiskFiles
from ui.settings import AppConfig

SCRIPT = [
    # run 1: the plan, the code and the tool call's arguments are edited
    "1. Draft a note.\n2. Send it to Eve.<end_plan>",
    code_reply("Send it.", "print(send_email(to='eve@example.com', body='hi'))"),
    code_reply("Done.", "final_answer('mail handled')"),
    # run 2: the plan and a code step are rejected with reasons, a question is answered
    "1. Delete every file.<end_plan>",
    code_reply("Delete.", "import os\nos.remove('notes.txt')"),
    code_reply("Ask instead.", "colour = ask_user('Which colour?')\nprint('colour', colour)"),
    code_reply("Done.", "final_answer(f'kept the files, {colour}')"),
]
EDITED_CODE = "print(send_email(to='team@example.com', body='hi'))"
EDITED_ARGS = {"to": "bob@example.com", "body": "hello Bob"}


class App:
    """The app on a data folder, its tab `key` known to the browser `token` (a new App: the app restarted)."""

    def __init__(self, tmp_path: Path, token: str, key: str) -> None:
        transcript = write_transcript(tmp_path / "script.json", SCRIPT)
        self.config = AppConfig(model=f"replay:{transcript}", data_dir=tmp_path / "data", authorized_imports=(),
                                max_steps=6)
        self.app = AgentDeckApp(self.config)
        self.handlers = ApprovalHandlers(self.app.services)
        self.history = HistoryController(self.app.services)  # the saved-chats list, as the page wires it
        self.req, self.token = Req(key), token

    def form(self) -> dict[str, Any]:
        return settings_form(self.config.model, planning_interval=6, tools=["send_email"])

    def load(self) -> list[dict]:
        return list(self.history.on_load({"token": self.token}, self.req, **self.form()))[-1][1]

    def send(self, text: str) -> None:
        list(self.app.run({"text": text, "files": []}, self.req, "all", **self.form()))

    def decide(self, name: str, *args: Any) -> None:
        shown = dict(zip(VIEW_KEYS, self.handlers.refresh(None, self.req), strict=True))["request_id"]
        assert shown, "nothing is waiting for a decision"
        getattr(self.handlers, name)(shown, *args, self.req)
        list(self.handlers.resume(self.req))

    @property
    def session(self):
        return self.app.session_for(self.req)

    def close(self) -> None:
        self.app.registry.shutdown()


def decisions_and_edits(messages: list[dict]) -> list[tuple[str, str]]:
    """(title, text) of every decision message and every message showing a person's edit, in order."""
    shown = []
    for message in messages:
        title, text = (message.get("metadata") or {}).get("title") or "", text_of(message)
        if title.startswith(("✋", "🚫")) or "Edited by you" in text or "The agent asks" in text:
            shown.append((title, text))
    return shown


@pytest.fixture
def tools_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ui import tool_offer

    (tmp_path / "mail_tools.py").write_text(MAIL_TOOLS)
    monkeypatch.setenv("AGENTDECK_TOOLS_PATH", str(tmp_path / "mail_tools.py"))
    monkeypatch.setenv("AGENTDECK_SECRET", "s" * 40)
    monkeypatch.setattr(tool_offer, "_TOOL_CACHE", None)  # the registry again, with the mail tool


def test_edits_and_rejections_are_shown_the_same_live_and_reopened(tmp_path: Path, tools_file: None) -> None:
    token = new_token()
    live = App(tmp_path, token, "tab")
    try:
        live.load()
        live.send("Email the team")
        live.decide("continue_plan", "1. Draft a note.\n2. Send it to Bob.")
        live.decide("approve", EDITED_CODE, "")
        live.decide("approve", "", json.dumps(EDITED_ARGS))
        live.decide("approve", "final_answer('mail handled')", "")
        assert live.session.record.transcript.finished.output == "mail handled"
        told = "\n".join(str(m["content"]) for m in live.session.agent.model.calls[2])
        assert "The user edited your plan" in told
        told = live.session.agent.model.calls[2][-1]["content"]  # after the edited step
        assert "The user edited your code before it ran" in told and EDITED_CODE in told
        assert "changed the arguments of your call to send_email" in told and "sent to bob@example.com" in told

        live.send("Tidy up")
        live.decide("reject", "Never delete files here.")
        live.decide("reject", "Not this either.")
        live.decide("approve", "colour = ask_user('Which colour?')\nprint('colour', colour)", "")
        live.send("teal")
        live.decide("approve", "final_answer(f'kept the files, {colour}')", "")
        assert live.session.record.transcript.finished.output == "kept the files, teal"
        shown_live = decisions_and_edits(live.session.record.transcript.messages())
    finally:
        live.close()

    titles = [title for title, _ in shown_live]
    texts = "\n".join(text for _, text in shown_live)
    assert titles.count("✋ Decision: edit") == 3
    assert "✋ Decision: reject · Never delete files here." in titles  # the reason, seen without a click
    assert "✋ Decision: reject · Not this either." in titles
    assert "🚫 You rejected this plan" in titles
    assert "Your edited plan:**\n\n1. Draft a note.\n2. Send it to Bob." in texts and "Send it to Eve." in texts
    assert f"Your edited code:**\n\n```python\n{EDITED_CODE}\n```" in texts
    assert "The agent's code (it did not run):**\n\n```python\nprint(send_email(to='eve@example.com'" in texts
    assert '"to": "bob@example.com"' in texts and "The agent's arguments (not used)" in texts
    step = next(text for title, text in shown_live if title.startswith("Step") and "Edited by you" in text)
    assert EDITED_CODE in step and "eve@example.com" not in step  # the step shows the code that ran

    reopened = App(tmp_path, token, "new-tab")  # the app restarted; the browser comes back
    try:
        shown_reopened = decisions_and_edits(reopened.load())
    finally:
        reopened.close()
    call = next(text for title, text in shown_live if title == "🛠️ send_email")  # a call the code made
    assert "Edited by you" in call and '"to": "bob@example.com"' in call
    assert shown_reopened == shown_live


def _base(step: int = 1) -> dict:
    return {"run_id": "r", "step": step}


def test_a_rejected_plan_shows_its_reason_in_the_chat() -> None:
    t = Transcript()
    t.apply(ev.StepStarted(**_base(), step_type="planning"))
    t.apply(ev.PlanProposed(**_base(), plan="1. Delete everything.", is_update=False))
    t.apply(ev.DecisionRequested(**_base(), request_id="p", request_kind="plan", payload={"plan": "1. Delete"}))
    t.apply(ev.DecisionMade(**_base(), request_id="p", request_kind="plan", outcome="reject",
                            detail="Never delete files."))
    t.apply(ev.StepFinished(**_base(), step_type="planning", duration_s=1.0, token_usage=TokenUsage()))
    messages = t.messages()
    titles = [(m.get("metadata") or {}).get("title") for m in messages]
    assert "✋ Decision: reject · Never delete files." in titles
    rejected = next(m for m in messages if (m.get("metadata") or {}).get("title") == "🚫 You rejected this plan")
    assert rejected["content"] == "Reason: Never delete files." and rejected["metadata"]["parent_id"].endswith(
        ":planning")


def test_an_edited_tool_call_shows_the_arguments_that_ran() -> None:
    t = Transcript()
    t.apply(ev.StepStarted(**_base(), step_type="action"))
    t.apply(ev.ToolCallProposed(**_base(), call_id="c1", tool_name="send_email", arguments={"to": "eve@x"}))
    t.apply(ev.DecisionRequested(**_base(), request_id="d", request_kind="tool_call",
                                 payload={"tool_name": "send_email", "arguments": {"to": "eve@x"}, "call_id": "c1"}))
    t.apply(ev.DecisionMade(**_base(), request_id="d", request_kind="tool_call", outcome="edit",
                            edited={"to": "bob@x"}))
    messages = {(m.get("metadata") or {}).get("title"): m["content"] for m in t.messages()}
    assert "Edited by you" in messages["🛠️ send_email"] and "bob@x" in messages["🛠️ send_email"]
    assert "eve@x" not in messages["🛠️ send_email"]
    decision = messages["✋ Decision: edit"]
    assert decision.index("bob@x") < decision.index("The agent's arguments (not used)") < decision.index("eve@x")


def test_a_tool_calling_agents_edited_call_shows_the_same_live_and_replayed(tmp_path: Path) -> None:
    from agents import ReplayModel, ToolCallingAgent, tool
    from agents.decisions import Decision, ScriptedDecider
    from agents.memory.serialize import load_memory, save_memory
    from tests.agents.conftest import call
    from ui.saved.restore import replay_memory

    @tool(requires_approval=True)
    def send_email(to: str, body: str) -> str:
        """Send an email.

        Args:
            to: Recipient address.
            body: Message text.
        """
        return f"sent to {to}"

    decider = ScriptedDecider([Decision.edit({"to": "bob@x", "body": "hi"}), Decision.reject("enough mail")])
    agent = ToolCallingAgent(tools=[send_email], verbosity=0, approval_policy="approve_tools", decider=decider,
                             model=ReplayModel([call("send_email", to="eve@x", body="hi"),
                                                call("send_email", to="all@x", body="spam"),
                                                call("final_answer", answer="done")]))
    live = Transcript(str(tmp_path))
    for event in agent.run("Email Bob", stream=True):
        live.apply(event)
    save_memory(agent.memory, tmp_path / "m.json", secret="s" * 32)
    reopened = Transcript(str(tmp_path))
    replay_memory(reopened, load_memory(tmp_path / "m.json", secret="s" * 32), [], DiskFiles(tmp_path))

    def shown(transcript: Transcript) -> list[tuple[str, str]]:
        return [((m.get("metadata") or {}).get("title") or "", text_of(m)) for m in transcript.messages()
                if ((m.get("metadata") or {}).get("title") or "").startswith(("✋", "🛠️"))]

    def decisions(transcript: Transcript) -> list[tuple[str, str]]:
        return [entry for entry in shown(transcript) if entry[0].startswith("✋")]

    def edited_call(transcript: Transcript) -> str:
        return next(text for title, text in shown(transcript) if title == "🛠️ send_email")

    assert decisions(reopened) == decisions(live)
    assert [title for title, _ in decisions(live)] == ["✋ Decision: edit", "✋ Decision: reject · enough mail"]
    assert edited_call(reopened) == edited_call(live)
    assert "Edited by you" in edited_call(live) and "bob@x" in edited_call(live) and "eve@x" not in edited_call(live)
