"""Changing settings mid-conversation keeps the conversation: the new agent gets the memory and the variables."""
from __future__ import annotations

from pathlib import Path

from ui_testlib import code_reply, write_transcript
from ui_testlib import form as settings_form

from ui.app import AgentDeckApp
from ui.settings import AppConfig


class Req:
    def __init__(self, key: str) -> None:
        self.session_hash = key


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

    def send(self, text: str, model: str) -> None:
        list(self.app.run({"text": text, "files": []}, self.req, **settings_form(model, max_steps=4)))

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
    assert any("Settings changed" in t and "continues this conversation" in t for t in texts)
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
