"""A bad model string is refused when it is chosen (start-up, the picker), with the reason; the embedded
model's note says what it can and cannot do and the one step to a real model."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gradio as gr
import pytest
from ui_testlib import PROJECT_ROOT
from ui_testlib import form as settings_form

from agents.errors import ConfigurationError
from agents.models.loader import check_model_string
from agents.models.selection import embedded_available
from ui.app import AgentDeckApp
from ui.model_choice import model_note
from ui.settings import AppConfig, RunSettings, SettingsRefusedError


class Req:
    session_hash = "tab-1"


@pytest.mark.parametrize(("model", "reason"), [
    ("embedded:tinyllama", "Unknown embedded model 'tinyllama'"),
    ("nonsense-model", "not a model name litellm knows"),
    ("foo/bar", "'foo' in 'foo/bar' is not a provider"),
    ("ollama:qwen", "Did you mean 'ollama/qwen'"),
    ("replay:/no/such/transcript.json", "does not exist"),
    ("", "Empty model string"),
])
def test_bad_model_strings_are_refused_without_loading_anything(model: str, reason: str) -> None:
    with pytest.raises(ConfigurationError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        check_model_string(model)


@pytest.mark.parametrize("model", ["embedded", "embedded:smollm2", "openai/gpt-4.1-mini", "gpt-4.1-mini",
                                   "hf:Qwen/Qwen2.5-Coder-32B-Instruct", "ollama/qwen2.5-coder:7b"])
def test_good_model_strings_pass(model: str) -> None:
    if model.startswith("embedded") and not embedded_available():
        pytest.skip("the embedded model's wheel is not installed")
    assert check_model_string(f" {model} ") == model


def test_a_bad_configured_model_is_refused_at_start_up_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="AGENTDECK_MODEL names the model 'nonsense-model'.*litellm"):
        AppConfig(model="nonsense-model", data_dir=tmp_path).check_models()
    with pytest.raises(ConfigurationError, match="AGENTDECK_MODELS names the model 'foo/bar'"):
        AppConfig(model="openai/gpt-4.1-mini", data_dir=tmp_path, allowed_models=("foo/bar",)).check_models()
    AppConfig(model="openai/gpt-4.1-mini", data_dir=tmp_path, allowed_models=("openai/gpt-4.1",)).check_models()


@pytest.mark.slow
def test_app_py_does_not_start_with_a_bad_model(tmp_path: Path) -> None:
    env = {**os.environ, "AGENTDECK_MODEL": "embedded:tinyllama", "AGENTDECK_DATA_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, str(PROJECT_ROOT / "app.py")], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "AgentDeck cannot start: AGENTDECK_MODEL names the model 'embedded:tinyllama'" in done.stderr
    assert "Unknown embedded model 'tinyllama'. Available: smollm2." in done.stderr
    assert "Traceback" not in done.stderr


def test_the_picker_shows_the_reason_and_a_run_is_refused_before_it_starts(tmp_path: Path) -> None:
    assert model_note("nonsense-model").startswith("⛔ **This model cannot be used**: 'nonsense-model' is not")
    config = AppConfig(model="openai/gpt-4.1-mini", data_dir=tmp_path / "data", free_choice=True)
    with pytest.raises(SettingsRefusedError, match="The model 'foo/bar' cannot be used: 'foo' in 'foo/bar'"):
        RunSettings.from_form(config, **settings_form("foo/bar", max_steps=5))
    app = AgentDeckApp(config)
    try:
        with pytest.raises(gr.Error, match="cannot be used"):
            list(app.run({"text": "What is 17 * 23?", "files": []}, Req(), **settings_form("foo/bar", max_steps=5)))
        assert app.session_for(Req()).agent is None  # no agent was built, no run started
        assert "What is 17 * 23?" not in str(app.session_for(Req()).record.transcript.messages())
    finally:
        app.registry.close(Req.session_hash)


def test_the_embedded_models_note_says_what_it_can_do_and_how_to_switch() -> None:
    note = model_note("embedded:smollm2")
    for part in ("arithmetic", "short text edits", "one fact about one column of an uploaded table",
                 "cannot do multi-step analysis, charts or web searches", "set HF_TOKEN", "restart",
                 "AGENTDECK_MODEL"):
        assert part in note, part


def test_the_small_embedded_model_is_offered_examples_it_can_answer() -> None:
    from ui.app import EXAMPLES, SMALL_MODEL_EXAMPLES, examples_for

    assert examples_for("embedded:smollm2") is SMALL_MODEL_EXAMPLES
    assert examples_for("openai/gpt-4o") is EXAMPLES and examples_for("hf:Qwen/Qwen2.5-Coder-32B-Instruct") is EXAMPLES
    assert all("\n" not in e["text"] and len(e["text"]) < 60 for e in SMALL_MODEL_EXAMPLES)  # one-step questions
    assert all(Path(f).is_file() for e in SMALL_MODEL_EXAMPLES for f in e.get("files", []))
