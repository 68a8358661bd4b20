"""Sign in with Hugging Face: the visitor's own token for hf: models, chats under their name, recorded demos."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from ui.app import RECORDED_DEMOS, AgentDeckApp
from ui.persistence import settings_dict
from ui.settings import AppConfig, RunSettings, build_agent


class Req:
    def __init__(self, key: str) -> None:
        self.session_hash = key
        self.headers: dict[str, str] = {}
        self.client = type("C", (), {"host": "10.0.0.1"})()
        self.username = None


def hf_config(tmp_path: Path) -> AppConfig:
    return AppConfig(model="hf:Qwen/Qwen2.5-Coder-32B-Instruct", data_dir=tmp_path, hf_login=True)


def test_not_signed_in_is_told_to_sign_in_not_to_install_anything(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    app = AgentDeckApp(hf_config(tmp_path))
    with pytest.raises(gr.Error) as refused:
        next(app.run("hi", "hf:Qwen/Qwen2.5-Coder-32B-Instruct", "code", 3, 0, [], "pandas", Req("t1")))
    text = str(refused.value)
    assert "Sign in with Hugging Face" in text and "pip" not in text and "install" not in text


def test_the_visitors_token_drives_their_own_model(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_server_owner")
    config = hf_config(tmp_path)
    settings = RunSettings(model="hf:Qwen/Qwen2.5-Coder-32B-Instruct", hf_token="hf_visitor_own",
                           authorized_imports=("pandas",))
    agent = build_agent(settings, tmp_path / "ws", config)
    try:
        token = agent.model._InferenceClientModel__token
        assert token == "hf_visitor_own"  # not the owner's
        other = build_agent(RunSettings(model=settings.model, hf_token="hf_someone_else"), tmp_path / "ws2", config)
        assert other.model is not agent.model
        other.close()
    finally:
        agent.close()
    assert "hf_token" not in settings_dict(settings) and "hf_visitor_own" not in repr(settings)


def test_a_signed_in_visitor_passes_the_check(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    app = AgentDeckApp(hf_config(tmp_path))
    token = gr.OAuthToken(token="hf_visitor", scope="inference-api", expires_at=None)
    settings = app._settings("hf:Qwen/Qwen2.5-Coder-32B-Instruct", "code", 3, 0, [], "pandas", token=token)
    assert settings.hf_token == "hf_visitor"


@pytest.mark.slow
def test_recorded_demos_play_for_anyone(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    app = AgentDeckApp(hf_config(tmp_path))
    try:
        expected = ["There are 344 penguins", "is the wettest month"]
        for index, demo in enumerate(RECORDED_DEMOS):
            updates: list[Any] = list(app.run_recorded(index, Req(f"demo-{index}")))
            session = app.registry.peek(f"demo-{index}")
            text = "\n".join(str(m.get("content")) for m in session.transcript.messages())
            assert expected[index] in text, text[-2000:]  # the recorded code ran to its final answer
            assert any(str(m.get("content")).endswith(".png") or ".png" in str(m.get("content"))
                       for m in session.transcript.messages() if isinstance(m.get("content"), dict))
            assert updates
    finally:
        app.registry.shutdown()


def test_saved_chats_are_keyed_by_the_signed_in_user(tmp_path: Path) -> None:
    app = AgentDeckApp(hf_config(tmp_path))
    alice = gr.OAuthProfile({"preferred_username": "alice", "name": "Alice", "picture": "",
                             "profile": "https://huggingface.co/alice"})
    owner_a, state = app.history.identify(None, Req("tab-a"), alice)
    owner_other_browser, _ = app.history.identify(None, Req("tab-b"), alice)
    assert owner_a == owner_other_browser  # the same person on two browsers: one list of chats
    anonymous, _ = app.history.identify(state, Req("tab-c"))
    assert anonymous != owner_a
    app.history.bind("tab-a", owner_a)
    assert app.history.identify(state, Req("tab-a"))[0] == owner_a  # later events of the signed-in tab
