"""The Markdown export of a chat says what the chat said (issue 19): the person's message and files (not the
upload prompt the model got), a rejected plan and step with their reasons, edited code and edited tool-call
arguments as what ran (marked), every decision, a parse failure as the chat showed it, a data frame answer
as a table, and steps numbered within each run as the chat numbers them. In-process: the app's handlers,
the replay model, the real sandbox; the export is also checked after the chat is reopened by a restarted app.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from ui_testlib import MAIL_TOOLS, Req, code_reply, text_of, write_transcript
from ui_testlib import form as settings_form

from agents.memory.export import EDITED_NOTE
from ui.app import AgentDeckApp
from ui.panels.approval_panel import VIEW_KEYS
from ui.panels.approvals import ApprovalHandlers
from ui.panels.exports import ChatExports
from ui.panels.history import HistoryController
from ui.saved.store import new_token
from ui.settings import AppConfig

pytestmark = pytest.mark.slow  # a real sandbox, two app starts


LOAD = "import pandas as pd\ndf = pd.read_csv('sizes.csv')\nprint(len(df))"
EDITED_LOAD = "import pandas as pd\ndf = pd.read_csv('sizes.csv')\nprint('rows', len(df))"
MAIL = "print(send_email(to='eve@example.com', body='hi'))"
EDITED_ARGS = {"to": "bob@example.com", "body": "hello Bob"}
ANSWER = "final_answer(df.groupby('kind')[['size']].mean())"
SCRIPT = [
    # run 1: the plan and a step are rejected, a step's code and a tool call's arguments edited, a reply
    # without code, a data frame as the answer
    "1. Delete every file.<end_plan>",
    code_reply("Delete.", "import os\nos.remove('sizes.csv')"),
    code_reply("Load.", LOAD),
    code_reply("Mail.", MAIL),
    "I am not sure what to do next.",
    code_reply("Answer.", ANSWER),
    # run 2: numbered from 1 again; a traceback names its step as the chat does
    "1. Divide.<end_plan>",
    code_reply("Divide.", "x = 1 / 0"),
    code_reply("Answer.", "final_answer('could not divide')"),
]
FORM_TOOLS = ["send_email"]


class App:
    """The app on a data folder, its tab `key` known to the browser `token` (a new App: the app restarted)."""

    def __init__(self, tmp_path: Path, token: str, key: str) -> None:
        transcript = write_transcript(tmp_path / "script.json", SCRIPT)
        self.config = AppConfig(model=f"replay:{transcript}", data_dir=tmp_path / "data", max_steps=8,
                                authorized_imports=("pandas",))
        self.app = AgentDeckApp(self.config)
        self.handlers = ApprovalHandlers(self.app.services)
        self.history = HistoryController(self.app.services)
        self.exports = ChatExports(self.app.services)
        self.req, self.token = Req(key), token

    def form(self) -> dict[str, Any]:
        return settings_form(self.config.model, max_steps=8, planning_interval=8, tools=FORM_TOOLS, imports="pandas")

    def load(self) -> list[dict]:
        return list(self.history.on_load({"token": self.token}, self.req, **self.form()))[-1][1]

    def send(self, text: str, files: list[str] | None = None) -> None:
        list(self.app.run({"text": text, "files": files or []}, self.req, "all", **self.form()))

    def decide(self, name: str, *args: Any) -> None:
        shown = dict(zip(VIEW_KEYS, self.handlers.refresh(None, self.req), strict=True))["request_id"]
        assert shown, "nothing is waiting for a decision"
        getattr(self.handlers, name)(shown, *args, self.req)
        list(self.handlers.resume(self.req))

    def markdown(self) -> str:
        return Path(self.exports.export_markdown(self.req)).read_text(encoding="utf-8")

    def notebook(self) -> Any:
        return nbformat.read(self.exports.export_notebook(self.req), as_version=4)

    @property
    def session(self):
        return self.app.session_for(self.req)

    def close(self) -> None:
        self.app.registry.shutdown()


@pytest.fixture
def tools_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ui import tool_offer

    (tmp_path / "mail_tools.py").write_text(MAIL_TOOLS)
    monkeypatch.setenv("AGENTDECK_TOOLS_PATH", str(tmp_path / "mail_tools.py"))
    monkeypatch.setenv("AGENTDECK_SECRET", "s" * 40)
    monkeypatch.setattr(tool_offer, "_TOOL_CACHE", None)  # the registry again, with the mail tool


def sections(markdown: str) -> list[str]:
    """The export cut at its headings: each section starts with its heading line."""
    return re.split(r"\n(?=#{2,3} )", markdown)


def section(markdown: str, heading: str, run: int = 1) -> str:
    """The `run`-th section (counting from 1) whose heading is `heading`."""
    found = [s for s in sections(markdown) if s.split("\n", 1)[0] == heading]
    assert len(found) >= run, f"no {heading!r} number {run} in:\n{markdown}"
    return found[run - 1]


def test_the_markdown_export_says_what_the_chat_said(tmp_path: Path, tools_file: None) -> None:
    upload = tmp_path / "sizes.csv"
    upload.write_text("kind,size\nsmall,1\nsmall,3\nbig,10\nbig,14\n")
    token = new_token()
    live = App(tmp_path, token, "tab")
    try:
        live.load()
        live.send("Look at my sizes", [str(upload)])
        live.decide("reject", "never delete my files")  # the plan
        live.decide("reject", "keep my data")  # os.remove
        live.decide("approve", EDITED_LOAD, "")  # the code, edited
        live.decide("approve", MAIL, "")  # the code as it was
        live.decide("approve", "", json.dumps(EDITED_ARGS))  # its tool call, arguments edited
        live.decide("approve", ANSWER, "")
        live.send("Now divide")
        live.decide("continue_plan", "1. Divide.")
        live.decide("approve", "x = 1 / 0", "")
        live.decide("approve", "final_answer('could not divide')", "")
        assert live.session.record.transcript.finished.output == "could not divide"
        messages = live.session.record.transcript.messages()
        markdown = live.markdown()
        notebook = live.notebook()
        workspace = str(live.session.record.workspace)
    finally:
        live.close()
    chat = "\n".join(text_of(m) for m in messages)
    titles = [(m.get("metadata") or {}).get("title") or "" for m in messages]

    # The person's words and files, as the chat shows them; not the prompt the model was given.
    assert "## Task\n\nLook at my sizes\n\n📎 Added to the workspace: `sizes.csv`\n\n### Plan" in markdown
    assert "📎 Added to the workspace: sizes.csv" in titles
    assert "uploaded to your working directory" not in markdown and "read it with pd.read_csv" not in markdown

    # Steps numbered within each run, as the chat's step titles are; the plans are not numbered.
    chat_steps = [t.replace(" ⚠️", "") for t in titles if re.fullmatch(r"Step \d+( ⚠️)?", t)]
    assert chat_steps == ["Step 1", "Step 2", "Step 3", "Step 4", "Step 5", "Step 1", "Step 2"]
    assert re.findall(r"^### (Step \d+)$", markdown, re.MULTILINE) == chat_steps

    # The rejected plan, with its reason, as the chat says it.
    plan = section(markdown, "### Plan")
    assert "**✋ Decision: reject · never delete my files**" in plan
    assert "✋ Decision: reject · never delete my files" in titles and "🚫 You rejected this plan" in titles
    assert "🚫 You rejected this plan. Reason: never delete my files" in plan
    assert "Reason: never delete my files" in chat

    # The rejected step: the person's reason, not what the model was told.
    rejected = section(markdown, "### Step 1")
    assert "🚫 You rejected this step. Reason: keep my data" in rejected
    assert "🚫 You rejected this step. Reason: keep my data" in chat
    assert "try another way" not in markdown and "Error" not in rejected

    # The edited code: what ran, marked as the person's; the agent's version only as the decision's.
    edited = section(markdown, "### Step 2")
    assert edited.index(EDITED_NOTE) < edited.index(EDITED_LOAD) < edited.index("**✋ Decision: edit**")
    assert edited.index("The agent's code (it did not run):") < edited.index("print(len(df))")
    assert "Output:\n\n```text\nrows 4\n```" in edited

    # The edited tool call: the arguments that ran, marked, and what came back.
    mail = section(markdown, "### Step 3")
    ran = json.dumps(EDITED_ARGS, indent=2, sort_keys=True)
    assert f"🛠️ Tool call `send_email`:\n\n{EDITED_NOTE}\n\n```json\n{ran}\n```" in mail
    assert mail.index("**✋ Decision: approve**") < mail.index(EDITED_NOTE)  # the code, approved as it was
    assert "The agent's arguments (not used):" in mail
    assert "Result:\n\n```text\nsent to bob@example.com: hello Bob" in mail
    assert ran in chat and "sent to bob@example.com: hello Bob" in chat

    # A reply without code: the model's text and the error the person saw, not the retry instructions.
    unparsed = section(markdown, "### Step 4")
    assert "I am not sure what to do next." in unparsed and "**Error: ParsingError**" in unparsed
    assert "The reply held no code block." in unparsed and "The reply held no code block." in chat
    assert "Answer again with" not in markdown

    # The data frame answer as the chat's table (Gradio's, in the chat).
    answer = section(markdown, "## Final answer")
    assert "| kind | size |" in answer and re.search(r"\| big \| 12(\.0)? \|", answer), answer
    tables = [m["content"]["value"] for m in messages
              if isinstance(m.get("content"), dict) and m["content"].get("component") == "dataframe"]
    assert [t["headers"] for t in tables] == [["kind", "size"]] and ["big", 12.0] in tables[0]["data"], tables

    # The second run: Step 1 and 2 again, and the traceback names the step as the chat numbers it.
    failed = section(markdown, "### Step 1", run=2)
    assert 'File "<step 1>"' in failed and "ZeroDivisionError" in failed, failed
    assert "<data" not in markdown and workspace not in markdown

    # The notebook: valid, the person's message, the answer's table, the edited code as a code cell.
    nbformat.validate(notebook)
    texts = [cell.source for cell in notebook.cells]
    assert any(t.startswith("## Task\n\nLook at my sizes\n\n📎") for t in texts)
    assert any("| kind | size |" in t for t in texts) and EDITED_LOAD in texts
    assert not any("uploaded to your working directory" in t for t in texts)

    reopened = App(tmp_path, token, "new-tab")  # the app restarted; the browser comes back
    try:
        reopened.load()
        again = reopened.markdown()
    finally:
        reopened.close()
    assert again == markdown
