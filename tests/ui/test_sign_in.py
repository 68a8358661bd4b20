"""Sign in with Hugging Face: the visitor's own token for hf: models, chats under their name, recorded demos."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from ui_testlib import form

from ui.agent_factory import build_agent
from ui.app import RECORDED_DEMOS, AgentDeckApp
from ui.panels.history import HistoryController
from ui.saved.store import settings_dict
from ui.settings import AppConfig, RunSettings
from ui.settings_form import FormValues
from ui.web.gradio_compat import MOCK_ACCESS_TOKEN, ExampleSelectData
from ui.web.hf_login_env import hf_login_from_env
from ui.web.sign_in import visitor_token


class Req:
    def __init__(self, key: str) -> None:
        self.session_hash = key
        self.headers: dict[str, str] = {}
        self.client = type("C", (), {"host": "10.0.0.1"})()
        self.username = None


#: The settings form choosing a Hugging Face model, which needs the visitor's token.
QWEN_FORM = form("hf:Qwen/Qwen2.5-Coder-32B-Instruct", max_steps=3, imports="pandas")


def hf_config(tmp_path: Path) -> AppConfig:
    return AppConfig(model="hf:Qwen/Qwen2.5-Coder-32B-Instruct", data_dir=tmp_path, hf_login=True)


def send(app: AgentDeckApp, key: str, text: str = "hi", from_page: bool = True) -> list[tuple]:
    """A message sent from the page (the event names the message box) or through the API (it names nothing)."""
    event = gr.EventData(gr.MultimodalTextbox(render=False) if from_page else None, None)
    if from_page:
        app.services.owners.mark_loaded(key)  # a page's load ran before its first message (tested elsewhere)
    return list(app.run(text, Req(key), event=event, **QWEN_FORM))


def chat_notes(app: AgentDeckApp, key: str) -> list[str]:
    session = app.registry.peek(key)
    return [str(m.get("content")) for m in session.record.transcript.messages()]


def test_a_page_without_sign_in_gets_a_note_in_the_chat_naming_what_is_on_the_page(tmp_path: Path,
                                                                                       monkeypatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    app = AgentDeckApp(hf_config(tmp_path))
    updates = send(app, "t1")  # no gr.Error: nothing failed, the visitor is told what to do
    assert len(updates) == 1
    chat, box = updates[0][0], updates[0][1]
    assert isinstance(box, dict) and box.get("__type__") == "update" and len(box) == 1  # gr.skip(): text stays
    assert "ad-error" not in str(chat)  # no red badge
    notes = chat_notes(app, "t1")
    assert len(notes) == 1
    note = notes[0]
    assert "Sign in with Hugging Face" in note and "right-hand column" in note and "sidebar" not in note
    for demo in RECORDED_DEMOS:  # the buttons as the page labels them
        assert demo["label"].split(":")[0] in note
    assert "Watch a recorded analysis" not in note and "pip" not in note and "install" not in note
    send(app, "t1", "hi again")
    assert len(chat_notes(app, "t1")) == 1  # said once, however often it is tried


def test_an_api_client_is_told_to_pass_a_token_not_to_click_a_button(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    app = AgentDeckApp(hf_config(tmp_path))
    with pytest.raises(gr.Error) as refused:
        send(app, "api-1", from_page=False)  # a gradio_client caller
    text = str(refused.value)
    assert "oauth_token=" in text and "button" not in text and "Sign in" not in text


def test_a_local_page_without_the_button_is_told_to_set_hf_token(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    config = AppConfig(model="hf:Qwen/Qwen2.5-Coder-32B-Instruct", data_dir=tmp_path, hf_login=False)
    app = AgentDeckApp(config)
    send(app, "t2")
    note = chat_notes(app, "t2")[0]
    assert "HF_TOKEN" in note and "another model" in note
    assert "Sign in" not in note and "button at" not in note


def test_examples_are_refused_the_same_way(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    app = AgentDeckApp(hf_config(tmp_path))
    app.services.owners.mark_loaded("t3")  # the page's load ran before the click
    updates = list(app.run_example(ExampleSelectData(gr.Chatbot(render=False), None), Req("t3"), **QWEN_FORM))
    assert updates and "Sign in with Hugging Face" in chat_notes(app, "t3")[0]


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
    settings = app.gate.settings(FormValues(**QWEN_FORM), token=token)
    assert settings.hf_token == "hf_visitor"


@pytest.mark.slow
def test_recorded_demos_play_for_anyone_each_in_a_fresh_chat(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    app = AgentDeckApp(hf_config(tmp_path))
    try:
        expected = ["There are 344 penguins", "is the wettest month"]
        for index, demo in enumerate(RECORDED_DEMOS):  # one after the other in the same tab
            updates: list[Any] = list(app.run_recorded(index, Req("demo-tab")))
            session = app.registry.peek("demo-tab")
            text = "\n".join(str(m.get("content")) for m in session.record.transcript.messages())
            assert expected[index] in text, text[-2000:]  # the recorded code ran to its final answer
            others = [phrase for i, phrase in enumerate(expected) if i != index]
            assert not any(phrase in text for phrase in others)  # the recorded analysis alone, not a continuation
            tasks = [step for step in session.agent.memory.steps if getattr(step, "step_type", "") == "task"]
            assert len(tasks) == 1 and tasks[0].task.startswith(demo["text"])  # this task alone
            assert any(".png" in str(m.get("content"))
                       for m in session.record.transcript.messages() if isinstance(m.get("content"), dict))
            assert updates
    finally:
        app.registry.shutdown()


def test_saved_chats_are_keyed_by_the_signed_in_user(tmp_path: Path) -> None:
    history = HistoryController(AgentDeckApp(hf_config(tmp_path)).services)
    alice = gr.OAuthProfile({"preferred_username": "alice", "name": "Alice", "picture": "",
                             "profile": "https://huggingface.co/alice"})
    owner_a, state = history.identify(None, Req("tab-a"), alice)
    owner_other_browser, _ = history.identify(None, Req("tab-b"), alice)
    assert owner_a == owner_other_browser  # the same person on two browsers: one list of chats
    anonymous, _ = history.identify(state, Req("tab-c"))
    assert anonymous != owner_a
    history.bind("tab-a", owner_a)
    assert history.identify(state, Req("tab-a"))[0] == owner_a  # later events of the signed-in tab


# ----- where the button goes, and the page's notes once signed in ----------------------------------
def test_the_button_only_where_gradio_can_serve_the_login(tmp_path: Path, caplog) -> None:
    no_token = {"HF_HOME": str(tmp_path / "hf")}  # no saved login there
    oauth = {"OAUTH_CLIENT_ID": "id", "OAUTH_CLIENT_SECRET": "s", "OAUTH_SCOPES": "openid inference-api",
             "OPENID_PROVIDER_URL": "https://hub.example"}
    with caplog.at_level(logging.WARNING, logger="agentdeck"):
        assert not hf_login_from_env({**no_token})  # plain local run: no button, nothing to say
        assert caplog.records == []
        # Locally Gradio mocks the login with the machine's token: without one it would crash at start-up.
        assert not hf_login_from_env({**no_token, "AGENTDECK_HF_LOGIN": "1"})
        assert "HF_TOKEN" in caplog.records[0].getMessage()
        caplog.clear()
        assert hf_login_from_env({**no_token, "AGENTDECK_HF_LOGIN": "1", "HF_TOKEN": "hf_mine"})
        assert hf_login_from_env({**no_token, "AGENTDECK_HF_LOGIN": "1", "HF_TOKEN": "hf_mine",
                                  "GRADIO_SERVER_NAME": "::1"})
        assert hf_login_from_env({**no_token, **oauth, "SYSTEM": "spaces", "SPACE_ID": "me/demo"})
        assert caplog.records == []
        # The mock makes every visitor this machine's account: never on a server others reach, never for a
        # Space's image run elsewhere (SPACE_ID alone), however many tokens the machine has.
        for env in ({"GRADIO_SERVER_NAME": "0.0.0.0", "AGENTDECK_HF_LOGIN": "1"},
                    {"GRADIO_SERVER_NAME": "192.168.1.20", "AGENTDECK_HF_LOGIN": "1"},
                    {"GRADIO_SERVER_NAME": "::", "AGENTDECK_HF_LOGIN": "1"},
                    {"GRADIO_SERVER_NAME": "example.org", "AGENTDECK_HF_LOGIN": "1"},
                    {"GRADIO_SHARE": "true", "AGENTDECK_HF_LOGIN": "1"},
                    {"SPACE_ID": "me/demo"}, {"SPACE_ID": "me/demo", **oauth}):
            caplog.clear()
            assert not hf_login_from_env({**no_token, "HF_TOKEN": "hf_mine", **env}), env
            assert len(caplog.records) == 1 and "\n" not in caplog.records[0].getMessage(), env
            assert "every visitor" in caplog.records[0].getMessage()
        caplog.clear()
        assert not hf_login_from_env({**no_token, "SYSTEM": "spaces", "SPACE_ID": "me/demo"})
        assert "hf_oauth: true" in caplog.records[0].getMessage()
        caplog.clear()  # a Space whose secret is empty: its cookie key would be sha256("-v4")
        assert not hf_login_from_env({**no_token, **oauth, "OAUTH_CLIENT_SECRET": " ", "SYSTEM": "spaces",
                                      "SPACE_ID": "me/demo"})
        assert "OAUTH_CLIENT_SECRET" in caplog.records[0].getMessage()


def test_launch_refuses_login_routes_that_cannot_tell_visitors_apart(monkeypatch) -> None:
    """The page may be built with the button in code, or served on another address than the environment says:
    before Gradio attaches its routes, the mock is refused off loopback and a Space needs a real secret."""
    import gradio.oauth

    from agents.errors import ConfigurationError
    from ui.web.login_guard import guard_login_routes

    monkeypatch.setattr(gradio.oauth, "OAUTH_CLIENT_SECRET", None)
    guard_login_routes(False, "0.0.0.0", {})  # no button: no routes, nothing to check
    for server, env in (("0.0.0.0", {"AGENTDECK_HF_LOGIN": "1"}), ("10.0.0.5", {"AGENTDECK_HF_LOGIN": "1"}),
                        (None, {"AGENTDECK_HF_LOGIN": "1", "GRADIO_SERVER_NAME": "0.0.0.0"}),
                        ("127.0.0.1", {"SPACE_ID": "me/demo"}),
                        ("0.0.0.0", {"SYSTEM": "spaces", "SPACE_ID": "me/demo"})):
        with pytest.raises(ConfigurationError, match="visitor|anyone"):
            guard_login_routes(True, server, env)
    shared = ((True, {"AGENTDECK_HF_LOGIN": "1"}), (None, {"AGENTDECK_HF_LOGIN": "1", "GRADIO_SHARE": "True"}))
    for share, env in shared:
        with pytest.raises(ConfigurationError, match="public link"):  # a tunnel to the loopback server
            guard_login_routes(True, "127.0.0.1", env, share=share)
    assert gradio.oauth.OAUTH_CLIENT_SECRET is None
    guard_login_routes(True, "127.0.0.1", {"AGENTDECK_HF_LOGIN": "1"})
    first = gradio.oauth.OAUTH_CLIENT_SECRET
    assert first and len(first) >= 32  # the mock's cookie key is no longer derived from ""
    guard_login_routes(True, None, {"AGENTDECK_HF_LOGIN": "1"})
    assert gradio.oauth.OAUTH_CLIENT_SECRET != first
    monkeypatch.setattr(gradio.oauth, "OAUTH_CLIENT_SECRET", "real-secret")
    guard_login_routes(True, "0.0.0.0", {"SYSTEM": "spaces", "SPACE_ID": "me/demo"})  # a real Space
    assert gradio.oauth.OAUTH_CLIENT_SECRET == "real-secret"


def test_gradios_local_mock_token_stands_for_the_machines_login(monkeypatch) -> None:
    monkeypatch.delenv("SYSTEM", raising=False)
    monkeypatch.setenv("HF_TOKEN", "hf_machine_login")
    mock = gr.OAuthToken(token=MOCK_ACCESS_TOKEN, scope="openid profile", expires_at=None)
    assert visitor_token(mock) == "hf_machine_login"  # the placeholder is refused by the Hub
    assert visitor_token(gr.OAuthToken(token="hf_visitor", scope="inference-api", expires_at=None)) == "hf_visitor"
    assert visitor_token(None) is None


def _load_handler(demo: gr.Blocks, elem_id: str) -> Any:
    for fn in demo.fns.values():
        if fn.name == "on_load" and any(getattr(block, "elem_id", None) == elem_id for block in fn.outputs):
            return fn
    raise AssertionError(f"no page-load handler updates #{elem_id}")


def as_on_a_space(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Space's environment with OAuth on (Gradio read the OAUTH_* variables when it was imported), so building
    the page attaches Gradio's real login routes (nothing goes to the network until someone signs in)."""
    import gradio.oauth

    monkeypatch.setenv("SYSTEM", "spaces")
    monkeypatch.setenv("SPACE_ID", "me/demo")
    for name, value in (("OAUTH_CLIENT_ID", "id"), ("OAUTH_CLIENT_SECRET", "secret"),
                        ("OAUTH_SCOPES", "openid profile inference-api"), ("OPENID_PROVIDER_URL", "http://127.0.0.1:9")):
        monkeypatch.setenv(name, value)
        monkeypatch.setattr(gradio.oauth, name, value)


def test_the_page_load_says_who_is_signed_in(tmp_path: Path, monkeypatch) -> None:
    from ui.layout import build_blocks

    monkeypatch.delenv("HF_TOKEN", raising=False)
    as_on_a_space(monkeypatch)
    app = AgentDeckApp(hf_config(tmp_path))
    demo = build_blocks(app)
    load = _load_handler(demo, "sign-in-note")
    assert [b.elem_id for b in load.outputs] == ["model-note", "chat-list-note", "sign-in-note"]
    alice = gr.OAuthProfile({"preferred_username": "alice", "name": "Alice", "picture": "",
                             "profile": "https://huggingface.co/alice"})
    model_md, list_md, sign_in_md = load.fn("hf:Qwen/Qwen2.5-Coder-32B-Instruct", Req("t"), alice)
    assert "Signed in as **alice**" in sign_in_md and "Sign in with" not in sign_in_md
    assert "sign in" not in model_md.lower() and "alice" in model_md
    assert "for this browser" not in list_md and "any browser" in list_md
    signed_out = load.fn("hf:Qwen/Qwen2.5-Coder-32B-Instruct", Req("t"), None)
    assert "Sign in with Hugging Face" in signed_out[2] and "sign in" in signed_out[0].lower()
    assert "for this browser" in signed_out[1]
    # Without the button (a local run without a token) the model note never asks for a sign-in.
    monkeypatch.delenv("SYSTEM")
    local = AgentDeckApp(AppConfig(model="hf:Qwen/Qwen2.5-Coder-32B-Instruct", data_dir=tmp_path / "l"))
    local_load = _load_handler(build_blocks(local), "model-note")
    model_md, _ = local_load.fn("hf:Qwen/Qwen2.5-Coder-32B-Instruct", Req("t"), None)
    assert "HF_TOKEN" in model_md and "sign in" not in model_md.lower()


def test_a_space_without_sign_in_tells_visitors_what_they_can_do(monkeypatch) -> None:
    """Visitors of a Space whose owner did not turn sign-in on can neither sign in nor set HF_TOKEN."""
    from ui.web.sign_in import sign_in_message

    monkeypatch.setenv("SPACE_ID", "someone/demo")
    text = sign_in_message(hf_login=False, has_page=True, demo_labels=["🎬 Penguins: a chart"])
    assert "HF_TOKEN" not in text and "owner" in text and "🎬 Penguins" in text
    monkeypatch.delenv("SPACE_ID")
    assert "HF_TOKEN" in sign_in_message(hf_login=False, has_page=True, demo_labels=["🎬 Penguins: a chart"])


def test_gradio_hands_the_run_handler_its_event_data() -> None:
    """`run` tells a page's message from an API call by its event data: Gradio fills the parameter only when its
    annotation is an EventData class (`gradio_compat.OptionalEventData`), not `EventData | None`."""
    import inspect

    from gradio import helpers

    event_index = helpers.special_args(AgentDeckApp.run, inputs=None)[2]
    assert event_index is not None
    assert list(inspect.signature(AgentDeckApp.run).parameters)[event_index] == "event"


def test_gradio_hands_the_chat_list_its_click() -> None:
    """`open_chat` reads the chat clicked from the click's data (`gradio_compat.OptionalSelectData`), which Gradio
    fills only when the annotation reads as an EventData class."""
    import inspect

    from gradio import helpers

    event_index = helpers.special_args(HistoryController.open_chat, inputs=None)[2]
    assert event_index is not None
    assert list(inspect.signature(HistoryController.open_chat).parameters)[event_index] == "clicked"
