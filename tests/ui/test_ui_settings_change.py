"""Changing settings mid-conversation keeps the conversation: the new agent gets the memory and the variables."""
from __future__ import annotations

from pathlib import Path

from conftest import code_reply, write_transcript
from ui.app import AgentDeckApp
from ui.settings import AppConfig


class Req:
    def __init__(self, key: str) -> None:
        self.session_hash = key


def test_switching_model_continues_the_conversation(tmp_path: Path) -> None:
    first = write_transcript(tmp_path / "first.json", [code_reply("Remember it.", "x = 41\nfinal_answer(x)")])
    second = write_transcript(tmp_path / "second.json", [code_reply("Use it.", "final_answer(x + 1)")])
    config = AppConfig(model=f"replay:{first}", data_dir=tmp_path / "data", authorized_imports=(), max_steps=4)
    app = AgentDeckApp(config)
    req = Req("tab-1")

    def send(text: str, model: str) -> None:
        list(app.run({"text": text, "files": []}, model, "code", 4, 0, [], "", req))

    send("Set x to 41.", f"replay:{first}")
    session = app.session_for(req)
    first_agent = session.agent
    send("Now add one.", f"replay:{second}")  # another model: a new agent must take over the conversation
    assert session.agent is not first_agent
    follow_up_prompt = session.agent.model.calls[0]
    assert any("Set x to 41." in str(m["content"]) for m in follow_up_prompt), "the memory was not carried over"
    texts = [str(m["content"] if isinstance(m, dict) else m.content) for m in session.transcript.messages()]
    assert any("Settings changed" in t and "continues this conversation" in t for t in texts)
    assert any(t.strip() == "42" for t in texts), "the follow-up could not use x from the first model's step"
    app.registry.close(req.session_hash)


def test_a_model_that_fails_to_load_loses_nothing(tmp_path: Path) -> None:
    first = write_transcript(tmp_path / "first.json", [code_reply("Remember it.", "x = 41\nfinal_answer(x)"),
                                                       code_reply("Use it.", "final_answer(x + 1)")])
    config = AppConfig(model=f"replay:{first}", data_dir=tmp_path / "data", authorized_imports=(), max_steps=4)
    app = AgentDeckApp(config)
    req = Req("tab-1")

    def send(text: str, model: str) -> None:
        list(app.run({"text": text, "files": []}, model, "code", 4, 0, [], "", req))

    send("Set x to 41.", f"replay:{first}")
    session = app.session_for(req)
    agent = session.agent
    send("Try another model.", f"replay:{tmp_path / 'missing.json'}")  # cannot load
    texts = [str(m["content"] if isinstance(m, dict) else m.content) for m in session.transcript.messages()]
    assert any("Could not start the agent" in t and "not found" in t for t in texts)
    assert session.agent is agent and any(s.step_type == "action" for s in agent.memory.steps)
    send("Now add one.", f"replay:{first}")  # back to the working model: same agent, same memory and variables
    texts = [str(m["content"] if isinstance(m, dict) else m.content) for m in session.transcript.messages()]
    assert any(t.strip() == "42" for t in texts)
    app.registry.close(req.session_hash)
