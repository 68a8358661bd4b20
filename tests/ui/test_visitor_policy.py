"""Settings a visitor can change are choices the operator allowed, checked on the server on every path."""
from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from gradio_client import Client
from ui_testlib import code_reply, form, run_app, write_transcript

from ui.model_choice import is_operator_only_model
from ui.saved.store import new_token
from ui.settings import AppConfig, RunSettings, SettingsRefusedError


def config(tmp_path: Path, **kwargs) -> AppConfig:
    return AppConfig(model="embedded:smollm2", data_dir=tmp_path, **kwargs)


@pytest.mark.parametrize("model", [
    "hf:http://127.0.0.1:9/v1", "replay:/etc/passwd", "transformers:Qwen/Qwen2.5-72B-Instruct",
    "hf:some-org/any-model", "openai/gpt-4.1@evil", "litellm:openai/x?api_base=http://h",
])
def test_models_outside_the_offer_are_refused(tmp_path: Path, model: str) -> None:
    with pytest.raises(SettingsRefusedError, match="not offered on this server"):
        RunSettings.from_form(config(tmp_path), **form(model))


def test_operator_only_strings_are_recognised() -> None:
    for model in ("replay:x.yaml", "transformers:a/b", "hf:http://h/v1", "ollama/x@host", "../x"):
        assert is_operator_only_model(model)
    for model in ("embedded:smollm2", "openai/gpt-4.1-mini", "hf:Qwen/Qwen2.5-Coder-32B-Instruct"):
        assert not is_operator_only_model(model)


def test_the_operators_own_choices_are_accepted(tmp_path: Path) -> None:
    demo = write_transcript(tmp_path / "demo.json", [code_reply("Done.", "final_answer(1)")])
    cfg = AppConfig(model=f"replay:{demo}", data_dir=tmp_path, allowed_models=("openai/gpt-4.1-mini",))
    assert RunSettings.from_form(cfg, **form(f"replay:{demo}")).model == f"replay:{demo}"
    assert RunSettings.from_form(cfg, **form("openai/gpt-4.1-mini")).model == "openai/gpt-4.1-mini"
    with pytest.raises(SettingsRefusedError):
        RunSettings.from_form(cfg, **form("embedded:smollm2"))  # the operator's list replaces the default offer


def test_imports_can_narrow_but_not_widen(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    assert RunSettings.from_form(cfg, **form(cfg.model, imports="pandas")).authorized_imports == ("pandas",)
    for extra in ("os", "pandas, subprocess", "*", "sys"):
        with pytest.raises(SettingsRefusedError, match="not allowed on this server"):
            RunSettings.from_form(cfg, **form(cfg.model, imports=extra))


def test_a_refused_setting_is_said_until_the_person_closes_it(tmp_path: Path) -> None:
    """Nothing of a refused message reaches the chat, so its reason stays on screen (a toast that faded after
    10 s left only a bare "Error" over the chat)."""
    import gradio as gr

    from ui.settings_form import FormValues
    from ui.web.run_gate import RunGate

    cfg = config(tmp_path)
    gate = RunGate(cfg, registry=None, streamer=None)  # type: ignore[arg-type]  # settings() needs neither
    with pytest.raises(gr.Error, match="subprocess") as refused:
        gate.settings(FormValues(**form(cfg.model, imports="pandas, subprocess")))
    assert refused.value.duration is None


def test_tools_outside_the_offer_are_refused(tmp_path: Path) -> None:
    cfg = config(tmp_path, allowed_tools=("web_search",))
    assert RunSettings.from_form(cfg, **form(cfg.model, tools=["web_search"])).tools == ("web_search",)
    with pytest.raises(SettingsRefusedError, match="not offered"):
        RunSettings.from_form(cfg, **form(cfg.model, tools=["visit_webpage"]))


def test_single_user_install_accepts_anything(tmp_path: Path) -> None:
    cfg = config(tmp_path, free_choice=True)
    assert RunSettings.from_form(cfg, **form("hf:my/model", imports="os")).authorized_imports == ("os",)


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_POST(self) -> None:
        type(self).hits.append(f"{self.path} {self.headers.get('Authorization')}")
        self.send_response(500)
        self.end_headers()

    do_GET = do_POST

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def attacker_endpoint() -> Iterator[str]:
    _Recorder.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.mark.slow
def test_api_cannot_send_the_servers_token_anywhere(tmp_path: Path, attacker_endpoint: str) -> None:
    """Token theft and SSRF through the model field: the API call is refused; the loopback host hears nothing."""
    transcript = write_transcript(tmp_path / "t.json", [code_reply("done", "final_answer('ok')")])
    env = {"HF_TOKEN": "hf_server_secret_token_do_not_leak", "OPENAI_API_KEY": "sk-server-secret"}
    (tmp_path / "data").mkdir()
    with run_app(transcript, tmp_path / "data", extra_env=env) as url:
        client = Client(url, verbose=False, download_files=False)
        for model in (f"hf:{attacker_endpoint}/v1", f"openai/gpt-4.1-mini?api_base={attacker_endpoint}",
                      f"replay:{transcript}.other", "transformers:Qwen/Qwen2.5-72B-Instruct"):
            with pytest.raises(Exception) as refused:
                client.predict({"text": "hi", "files": []}, **form(model, imports="pandas"),
                               approval_mode="autonomous", api_name="/run")
            # Gradio's own check of the picker's choices answers first; the server's check stands behind it.
            assert any(s in str(refused.value) for s in ("not offered on this server", "not in the list of choices"))
            with pytest.raises(Exception) as refused:  # an example run takes the same settings
                client.predict(**form(model, imports="pandas"), approval_mode="autonomous", api_name="/run_example")
            assert any(s in str(refused.value) for s in ("not offered on this server", "not in the list of choices"))
            for api_name, inputs in (("/retry", ()), ("/edit_last_message", ("hi",))):  # Retry and Edit too
                with pytest.raises(Exception) as refused:
                    client.predict(*inputs, **form(model, imports="pandas"), approval_mode="autonomous",
                                   api_name=api_name)
                assert any(s in str(refused.value)
                           for s in ("not offered on this server", "not in the list of choices"))
            # The settings form also reaches the server when a page loads, a chat is opened or taken over: a
            # hostile model there is refused or ignored, never used.
            token = new_token()
            for api_name, inputs in (("/browser_session", ({"token": token},)), ("/take_over", ({"token": token},)),
                                     ("/open_chat", ({"token": token}, "0" * 32))):
                try:
                    client.predict(*inputs, **form(model, imports="pandas"), api_name=api_name)
                except Exception as exc:
                    assert "not offered" in str(exc) or "not in the list of choices" in str(exc), exc
        with pytest.raises(Exception) as widened:
            client.predict({"text": "hi", "files": []}, **form(f"replay:{transcript}", imports="pandas, os"),
                           approval_mode="autonomous", api_name="/run")
        assert "not allowed on this server" in str(widened.value)
    assert _Recorder.hits == []


def test_only_models_this_server_can_reach_are_offered(monkeypatch) -> None:
    """A hosted model without its key, or a local Ollama server nobody configured, would only give errors
    (and Ollama would make the server connect to its own loopback port)."""
    from ui.model_choice import reachable_model

    assert not reachable_model("openai/gpt-4.1", env={})
    assert reachable_model("openai/gpt-4.1", env={"OPENAI_API_KEY": "sk-x"})
    assert not reachable_model("ollama/qwen2.5-coder:7b", env={})
    assert reachable_model("ollama/qwen2.5-coder:7b", env={"OLLAMA_API_BASE": "http://gpu-box:11434"})
    assert not reachable_model("hf:Qwen/Qwen2.5-Coder-32B-Instruct", env={})
    assert reachable_model("hf:Qwen/Qwen2.5-Coder-32B-Instruct", hf_login=True, env={})
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN", "OLLAMA_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    config = AppConfig(model="embedded:smollm2", data_dir=Path("unused"))
    offered = config.visitor_models()
    assert "openai/gpt-4.1" in offered and "ollama/qwen2.5-coder:7b" not in offered
    assert not [m for m in offered if m.startswith(("anthropic/", "hf:"))]
