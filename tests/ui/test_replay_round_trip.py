"""Save -> load -> replay gives the same events and the same chat (issue 20: one mapping from steps to events).

A chat runs through the app's session path (handlers in-process, the replay model, the real sandbox) with
every kind of step a person sees: plans reviewed, code approved and rejected, printed output, an error, an
image and a file, a question answered, answers, and a follow-up run. The events the live chat was fed are
recorded; the chat is saved, reopened in a fresh app on the same data folder (the app after a restart), and the
events the reopened chat was fed must be the live ones without the streaming-only ones (agents/step_events/),
and the chat must be the same. If the loop's emit code and the replay ever map a step differently, this fails.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from ui_testlib import Req, chat_text, code_reply, write_transcript
from ui_testlib import form as settings_form

from agents import events as ev
from agents.step_events import STREAMING_ONLY, replayable
from ui.app import AgentDeckApp
from ui.chat.published_files import publish_root
from ui.chat.render import Transcript
from ui.panels.approval_panel import VIEW_KEYS
from ui.panels.approvals import ApprovalHandlers
from ui.panels.history import HistoryController
from ui.saved.store import new_token
from ui.session.workspace_access import DiskFiles
from ui.settings import AppConfig

#: A 1x1 PNG, written by the agent's code: an image artifact without a plotting library.
PNG_HEX = ("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
           "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201a5f1f1a90000000049454e44ae426082")

PLAN = "1. Make the numbers.\n2. Save a picture and a table.\n3. Answer.<end_plan>"
SCRIPT = [
    PLAN,
    code_reply("Make the numbers.", "rows = [1, 2, 3]\nprint('rows', rows)"),
    code_reply("Check a ratio.", "print('before the error')\nprint(sum(rows) / 0)"),
    code_reply("Save a picture and a table.",
               f"open('dot.png', 'wb').write(bytes.fromhex('{PNG_HEX}'))\n"
               "open('numbers.csv', 'w').write('n\\n1\\n2\\n3\\n')\nprint('saved')"),
    code_reply("Remove the table.", "import os\nos.remove('numbers.csv')"),
    code_reply("Ask for a colour.", "colour = ask_user('Which colour should the dots be?')\nprint('colour', colour)"),
    code_reply("Answer.", "final_answer(f'{sum(rows)} {colour} dots')"),
    "1. Double the total.<end_plan>",
    code_reply("Double it.", "final_answer(sum(rows) * 2)"),
]
MAX_STEPS = 8
#: Events whose time the chat shows: their timestamps are recorded with the step and must come back too.
TIMED = (ev.StepStarted, ev.StepFinished, ev.ToolCallProposed, ev.ToolCallResult, ev.DecisionRequested,
         ev.DecisionMade)


@pytest.fixture(autouse=True)
def _secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTDECK_SECRET", "r" * 40)


@pytest.fixture
def fed(monkeypatch: pytest.MonkeyPatch) -> dict[int, list[ev.Event]]:
    """Every event each chat (Transcript) is fed, by the chat's id: live runs and reopened chats alike."""
    received: dict[int, list[ev.Event]] = defaultdict(list)
    apply = Transcript.apply

    def recording(self: Transcript, event: ev.Event) -> None:
        received[id(self)].append(event)
        apply(self, event)

    monkeypatch.setattr(Transcript, "apply", recording)
    return received


class App:
    """The app on a data folder (a new instance is the app after a restart), driven like the page drives it."""

    def __init__(self, tmp_path: Path, script_replies: list[str] = SCRIPT, tools: tuple[str, ...] = ()) -> None:
        script = write_transcript(tmp_path / "script.json", script_replies)
        self.config = AppConfig(model=f"replay:{script}", data_dir=tmp_path / "data", authorized_imports=(),
                                max_steps=MAX_STEPS)
        self.tools = list(tools)
        self.app = AgentDeckApp(self.config)
        self.approvals = ApprovalHandlers(self.app.services)
        self.history = HistoryController(self.app.services)  # the saved-chats list, as the page wires it
        self.req = Req("tab")

    def form(self) -> dict[str, Any]:
        return settings_form(self.config.model, max_steps=MAX_STEPS, planning_interval=MAX_STEPS, tools=self.tools)

    @property
    def session(self) -> Any:
        return self.app.session_for(self.req)

    def load(self, token: str) -> tuple:
        return list(self.history.on_load({"token": token}, self.req, **self.form()))[-1]

    def send(self, text: str) -> None:
        list(self.app.run({"text": text, "files": []}, self.req, "all", **self.form()))

    def pending(self) -> ev.DecisionRequested:
        """The decision the panel shows (the run ended there: the session's pending request, from its memory)."""
        view = dict(zip(VIEW_KEYS, self.approvals.refresh(None, self.req), strict=True))
        request = self.session.pending_request()
        assert request is not None and request.request_id == view["request_id"]
        return request

    def decide(self, name: str, *args: Any) -> None:
        """Press a panel button as the page does, then stream the rest of the run."""
        getattr(self.approvals, name)(self.pending().request_id, *args, self.req)
        list(self.approvals.resume(self.req))

    def close(self) -> None:
        self.app.registry.shutdown()


def comparable(event: ev.Event) -> tuple[str, dict[str, Any]]:
    """An event as data: its type and fields, the timestamp only where the chat shows it."""
    fields = {f.name: getattr(event, f.name) for f in dataclasses.fields(event)}
    if not isinstance(event, TIMED):
        fields.pop("timestamp")
    return type(event).__name__, fields


SESSION_FOLDER = re.compile(re.escape(str(publish_root())) + r"/[0-9a-f]{32}/")


def comparable_chat(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chat's messages, a file shown by its content (each session publishes its own copies of a file, in a
    folder of its own: a link in a text names that folder, replaced here)."""
    shown = []
    for message in messages:
        content = message["content"]
        if isinstance(content, dict):
            content = {**content, "path": hashlib.sha256(Path(content["path"]).read_bytes()).hexdigest()}
        elif isinstance(content, str):
            content = SESSION_FOLDER.sub(f"{publish_root()}/<session>/", content)
        shown.append({**message, "content": content})
    return shown


def run_the_chat(app: App) -> None:
    app.send("Count my numbers, draw them and keep a table")
    app.decide("continue_plan", PLAN.removesuffix("<end_plan>"))  # the plan as proposed: an approval
    app.decide("approve", "rows = [1, 2, 3]\nprint('rows', rows)", "")
    app.decide("approve", "print('before the error')\nprint(sum(rows) / 0)", "")  # fails: an error step
    app.decide("approve", app.pending().payload["code"], "")  # the picture and the table
    app.decide("reject", "keep the table")
    app.decide("approve", app.pending().payload["code"], "")  # asks a question...
    app.send("blue")  # ...answered in the message box
    app.decide("approve", "final_answer(f'{sum(rows)} {colour} dots')", "")
    app.send("Now double the total")  # a follow-up run: its steps go on from step 6
    app.decide("continue_plan", "1. Double the total.")
    app.decide("approve", "final_answer(sum(rows) * 2)", "")


def test_a_saved_chat_reopens_with_the_same_events_and_the_same_chat(tmp_path: Path, fed) -> None:
    token = new_token()
    live_app = App(tmp_path)
    try:
        live_app.load(token)
        run_the_chat(live_app)
        live = live_app.session
        live_events = fed[id(live.record.transcript)]
        live_transcript = live.record.transcript
        live_chat, live_status = comparable_chat(live_transcript.messages()), live_transcript.status_text()
        assert live.record.transcript.finished.output == 12 and not live.agent.pending_decisions()
        # What the live run went through, so the comparison below covers all of it.
        kinds = {type(e) for e in live_events}
        assert {ev.ModelTextDelta, ev.PlanProposed, ev.CodeProposed, ev.ExecutionLog, ev.ArtifactCreated,
                ev.StepError, ev.DecisionRequested, ev.DecisionMade, ev.Observation, ev.FinalAnswer} <= kinds
        errors = {e.error_type for e in live_events if isinstance(e, ev.StepError)}
        assert errors == {"ExecutionError", "RejectedByUser"}
        assert {e.artifact_kind for e in live_events if isinstance(e, ev.ArtifactCreated)} == {"image", "file"}
        assert {e.request_kind for e in live_events if isinstance(e, ev.DecisionMade)} == {"plan", "code", "question"}
        # Two runs, each paused at each decision (pause mode: a paused run ends, its answer resumes it).
        assert sum(isinstance(e, ev.RunFinished) and e.state != "paused" for e in live_events) == 2
    finally:
        live_app.close()

    reopened_app = App(tmp_path)  # the app after a restart, on the same data folder
    try:
        reopened_app.load(token)  # the browser comes back: its current chat is reopened
        reopened = reopened_app.session
        assert reopened is not live
        replayed = fed[id(reopened.record.transcript)]
        assert not any(isinstance(e, STREAMING_ONLY) for e in replayed)
        assert [comparable(e) for e in replayed] == [comparable(e) for e in replayable(live_events)]

        chat = reopened.record.transcript.messages()
        assert comparable_chat(chat[:len(live_chat)]) == live_chat
        restored_notes = chat[len(live_chat):]
        assert len(restored_notes) == 1 and "Chat restored" in restored_notes[0]["content"]
        assert reopened.record.transcript.status_text() == live_status
    finally:
        reopened_app.close()


def test_a_chat_saved_before_error_types_were_recorded_reopens_as_it_showed(tmp_path: Path) -> None:
    """A memory of schema 1 (tests/memory/data/memory_v1.json, written by the old code) still opens: its
    rejection shows the person's reason, its failed step an error, then the answer."""
    from agents.memory import serialize
    from ui.saved.restore import replay_memory

    document = json.loads((Path(__file__).parents[1] / "memory" / "data" / "memory_v1.json").read_text())
    secret = b"v1-chat-secret-0123456789"
    envelope = {"document": document, "signature": {"algorithm": "HMAC-SHA256",
                                                    "value": serialize.sign(document, secret)}}
    memory = serialize.loads_memory(serialize.canonical_json(envelope), secret)
    transcript = Transcript(str(tmp_path))
    replay_memory(transcript, memory, [{"task": "Work out the total", "text": "What is the total?"}],
                  DiskFiles(tmp_path))
    text = chat_text(transcript.messages())
    assert "What is the total?" in text and "total 6" in text
    assert "💥 Error: Error" in text and "ZeroDivisionError" in text
    assert "🚫 You rejected this step" in text and "Reason: keep the files" in text
    assert text.count("✋ Decision: approve") == 3 and "✋ Decision: reject" in text
    assert text.rstrip().endswith("total is 6") and transcript.status_text().startswith("success · 4 steps")


SEARCH_SCRIPT = [
    "1. Search the web.\n2. Answer.<end_plan>",
    code_reply("Search the web.", "print('searching')\nresults = web_search('penguin body mass')\nprint(results)"),
    code_reply("The person refused the search.", "final_answer('done without the web')"),
]


def test_a_rejected_tool_call_shows_the_persons_reason_live_and_reopened(tmp_path: Path, fed) -> None:
    """Issue 19: a rejection shows its reason, not an error. The code's call to web_search is rejected: the call
    and its step say so (no red error, no ⚠️ on the step), the model is told why, and a reopened chat agrees."""
    token = new_token()
    live_app = App(tmp_path, SEARCH_SCRIPT, tools=("web_search",))
    try:
        live_app.load(token)
        live_app.send("Search the web for penguin body mass")
        live_app.decide("continue_plan", SEARCH_SCRIPT[0].removesuffix("<end_plan>"))
        live_app.decide("approve", live_app.pending().payload["code"], "")
        assert live_app.pending().payload["tool_name"] == "web_search"
        live_app.decide("reject", "no web searches today, please")
        live_app.decide("approve", "final_answer('done without the web')", "")
        live = live_app.session
        assert live.record.transcript.finished.output == "done without the web"
        told = str(live.agent.memory.messages[-3:])
        assert "rejected the call to web_search: no web searches today, please" in told  # the model knows why
        live_events = fed[id(live.record.transcript)]
        results = [e for e in live_events if isinstance(e, ev.ToolCallResult)]
        assert [(e.tool_name, e.rejected, e.is_error, e.output) for e in results] == [
            ("web_search", True, False, "no web searches today, please")]
        assert not any(isinstance(e, ev.StepError) for e in live_events)
        live_chat = comparable_chat(live.record.transcript.messages())
        shown = [m for m in live.record.transcript.messages()  # what the model is told is shown verbatim
                 if not ((m.get("metadata") or {}).get("title") or "").startswith("👁️")]
        text = chat_text(shown)
        assert "🚫 You rejected the call to **web_search**. Reason: no web searches today, please" in text
        assert "🚫 web_search: you rejected this call" in text and "Step 1\n" in text
        assert "⚠️" not in text and "ad-error" not in text and "failed" not in text and "Error" not in text
    finally:
        live_app.close()

    reopened_app = App(tmp_path, SEARCH_SCRIPT, tools=("web_search",))
    try:
        reopened_app.load(token)
        reopened = reopened_app.session
        replayed = fed[id(reopened.record.transcript)]
        assert [comparable(e) for e in replayed] == [comparable(e) for e in replayable(live_events)]
        chat = reopened.record.transcript.messages()
        assert comparable_chat(chat[:len(live_chat)]) == live_chat
    finally:
        reopened_app.close()
