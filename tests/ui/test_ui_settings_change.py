"""Changing settings mid-conversation keeps the conversation: a new model's agent gets the memory and the
variables; run-level settings (max steps, planning, approval mode, tools offered) build nothing (issue 32); new
imports give the same agent a new sandbox, said once; a restored chat's next messages keep its agent (issue 31)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from ui_testlib import MAIL_TOOLS, Req, chat_text, code_reply, write_transcript
from ui_testlib import form as settings_form

from ui import tool_offer
from ui.app import AgentDeckApp
from ui.panels.history import HistoryController
from ui.saved.store import new_token
from ui.settings import AppConfig


class Chat:
    """The app in-process with one tab, and what that tab's chat shows."""

    def __init__(self, tmp_path: Path, default_model: str) -> None:
        config = AppConfig(model=default_model, data_dir=tmp_path / "data", authorized_imports=(), max_steps=4,
                           free_choice=True)  # a single-user install: any model string may be picked
        self.app = AgentDeckApp(config)
        self.req = Req("tab-1")

    @property
    def session(self):
        return self.app.session_for(self.req)

    def send(self, text: str, model: str, mode: str | None = None, **settings: Any) -> None:
        settings.setdefault("max_steps", 4)
        list(self.app.run({"text": text, "files": []}, self.req, mode, **settings_form(model, **settings)))

    def texts(self) -> list[str]:
        messages = self.session.record.transcript.messages()
        return [str(m["content"] if isinstance(m, dict) else m.content) for m in messages]

    def close(self) -> None:
        self.app.registry.close(self.req.session_hash)


def test_switching_model_continues_the_conversation(tmp_path: Path) -> None:
    first = write_transcript(tmp_path / "first.json", [code_reply("Remember it.", "x = 41\nfinal_answer(x)")])
    second = write_transcript(tmp_path / "second.json", [code_reply("Use it.", "final_answer(x + 1)")])
    chat = Chat(tmp_path, f"replay:{first}")
    chat.send("Set x to 41.", f"replay:{first}")
    session = chat.session
    first_agent = session.agent
    chat.send("Now add one.", f"replay:{second}")  # another model: a new agent must take over the conversation
    assert session.agent is not first_agent
    follow_up_prompt = session.agent.model.calls[0]
    assert any("Set x to 41." in str(m["content"]) for m in follow_up_prompt), "the memory was not carried over"
    texts = chat.texts()
    assert sum("Settings changed" in t and "continues this conversation" in t and "model: replay:" in t
               for t in texts) == 1  # said once, naming what needed the new agent
    assert any(t.strip() == "42" for t in texts), "the follow-up could not use x from the first model's step"
    chat.close()


def test_a_model_that_fails_to_load_loses_nothing(tmp_path: Path) -> None:
    first = write_transcript(tmp_path / "first.json", [code_reply("Remember it.", "x = 41\nfinal_answer(x)"),
                                                       code_reply("Use it.", "final_answer(x + 1)")])
    chat = Chat(tmp_path, f"replay:{first}")
    chat.send("Set x to 41.", f"replay:{first}")
    agent = chat.session.agent
    broken = tmp_path / "broken.json"
    broken.write_text("{}")  # a transcript that exists (so the picker accepts it) but cannot be loaded
    chat.send("Try another model.", f"replay:{broken}")
    assert any("Could not start the agent" in t and "non-empty list of replies" in t for t in chat.texts())
    assert chat.session.agent is agent and any(s.step_type == "action" for s in agent.memory.steps)
    chat.send("Now add one.", f"replay:{first}")  # back to the working model: same agent, memory and variables
    assert any(t.strip() == "42" for t in chat.texts())
    chat.close()


# ----- what a change builds: counted -------------------------------------------------------------------
@dataclass
class Built:
    agents: int = 0
    models: int = 0
    sandboxes: int = 0
    replays: int = 0


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> Built:
    """Counts the agents the app's factory builds, the models it loads, the sandboxes started and the re-runs of
    a chat's recorded code (`rebuild_sandbox_state`)."""
    import agents.loop.restore as restore
    import ui.agent_factory as factory
    import ui.services as services
    from agents.executor import PythonSandbox

    counts = Built()

    def counted(target: Any, name: str, field: str) -> None:
        original = getattr(target, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            setattr(counts, field, getattr(counts, field) + 1)
            return original(*args, **kwargs)
        monkeypatch.setattr(target, name, wrapper)

    counted(services, "build_agent", "agents")
    counted(factory, "load_model", "models")
    counted(PythonSandbox, "__init__", "sandboxes")
    counted(restore, "rebuild_sandbox_state", "replays")
    return counts


@pytest.fixture
def mail_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The decision tests' send_email tool among the tools a visitor may choose; its outbox file."""
    tools_file = tmp_path / "mail_tools.py"
    tools_file.write_text(MAIL_TOOLS)
    monkeypatch.setenv("AGENTDECK_TOOLS_PATH", str(tools_file))
    monkeypatch.setattr(tool_offer, "_TOOL_CACHE", None)  # the registry loaded again, with the user's tool
    return tmp_path / "outbox.txt"


def test_run_level_settings_build_nothing(tmp_path: Path, built: Built, mail_tool: Path) -> None:
    """Max steps, planning interval, approval mode and the tools offered change between messages: one agent,
    one model, one sandbox, no re-run of the recorded code, no note; each run used its own settings."""
    script = write_transcript(tmp_path / "script.json", [
        code_reply("Remember it.", "x = 41\nfinal_answer(x)"),
        code_reply("Use it.", "final_answer(x + 1)"),
        "1. Add two.\n2. Answer.<end_plan>", code_reply("Planned.", "final_answer(x + 2)"),
        code_reply("Mail it.", "final_answer(send_email(to='eve@example.com', body=str(x)))"),
    ])
    model = f"replay:{script}"
    chat = Chat(tmp_path, model)
    chat.send("Set x to 41.", model)
    agent = chat.session.agent
    chat.send("Add one, in at most two steps.", model, max_steps=2)
    chat.send("Add two, with a plan.", model, planning_interval=1, mode="approve_tools")
    chat.send("Mail it.", model, tools=["send_email"], mode="autonomous")
    assert chat.session.agent is agent
    assert built == Built(agents=1, models=1, sandboxes=1, replays=0)
    text = "\n".join(chat.texts())
    assert "Settings changed" not in text and "Imports changed" not in text
    assert mail_tool.read_text() == "eve@example.com: 41\n"  # the tool offered in that run only
    tasks = [s for s in agent.memory.steps if s.step_type == "task"]
    assert [t.max_steps for t in tasks] == [4, 2, 4, 4]
    assert [s.step_type for s in agent.memory.steps].count("planning") == 1
    assert "send_email" not in str(agent.model.calls[0][0]["content"])  # not offered before it was chosen
    assert "send_email" in str(agent.model.calls[-1][0]["content"])
    assert chat.session.agent_settings.max_steps == 4 and chat.session.agent_settings.tools == ("send_email",)
    chat.close()


def test_new_imports_rebuild_the_variables_once(tmp_path: Path, built: Built) -> None:
    """Imports are fixed when a sandbox starts: the same agent and model get a new sandbox, the recorded code
    runs again there, and the chat says so once."""
    script = write_transcript(tmp_path / "script.json", [
        code_reply("Remember it.", "x = 41\nfinal_answer(x)"),
        code_reply("Use csv.", "import csv\nfinal_answer(x + 1)"),
        code_reply("Again.", "import csv\nfinal_answer(x + 2)"),
    ])
    model = f"replay:{script}"
    chat = Chat(tmp_path, model)
    chat.send("Set x to 41.", model, imports="")
    agent = chat.session.agent
    chat.send("Add one with csv imported.", model, imports="csv")
    chat.send("Add two.", model, imports="csv")
    assert chat.session.agent is agent
    assert built == Built(agents=1, models=1, sandboxes=2, replays=1)
    texts = chat.texts()
    assert sum("Imports changed" in t for t in texts) == 1 and not any("Settings changed" in t for t in texts)
    assert [t.strip() for t in texts if t.strip() in ("42", "43")] == ["42", "43"]  # x was rebuilt
    chat.close()


def test_a_restored_chat_keeps_its_agent(tmp_path: Path, built: Built, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 31, item 11: a reopened chat said "Settings changed" (and re-ran its code in a new agent) on a next
    message though its model was the same: a signed-in visitor's token counted for a model that takes none, and
    any run-level setting counted as a change."""
    monkeypatch.setenv("AGENTDECK_SECRET", "s" * 40)
    script = write_transcript(tmp_path / "script.json", [code_reply("Remember it.", "x = 41\nfinal_answer(x)")])
    model = f"replay:{script}"
    token = new_token()

    def app() -> tuple[AgentDeckApp, HistoryController]:
        config = AppConfig(model=model, data_dir=tmp_path / "data", authorized_imports=(), max_steps=4)
        made = AgentDeckApp(config)
        return made, HistoryController(made.services)

    first, history = app()
    list(history.on_load({"token": token}, Req("tab"), **settings_form(model, max_steps=4)))
    list(first.run({"text": "Set x to 41.", "files": []}, Req("tab"), **settings_form(model, max_steps=4)))
    first.registry.shutdown()
    write_transcript(script, [code_reply("Use it.", "final_answer(x + 1)"),
                              code_reply("Again.", "final_answer(x + 2)")])
    built.agents = built.models = built.sandboxes = built.replays = 0
    second, history = app()
    try:
        list(history.on_load({"token": token}, Req("tab2"), **settings_form(model, max_steps=4)))
        session = second.registry.peek("tab2")
        agent = session.agent
        assert agent is not None and built.replays == 1
        signed_in = gr.OAuthToken(token="hf_visitor_token", scope="inference-api", expires_at=0)
        for text, steps in (("Add one.", 4), ("Add two, in three steps at most.", 3)):
            list(second.run({"text": text, "files": []}, Req("tab2"), oauth_token=signed_in,
                            **settings_form(model, max_steps=steps)))
        text = chat_text(session.record.transcript.messages())
        assert "Settings changed" not in text and "43" in text
        assert session.agent is agent and built.agents == 1 and built.replays == 1
    finally:
        second.registry.shutdown()
