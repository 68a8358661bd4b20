"""Model strings → adapters, default choice, and secrets kept out of reprs."""
from __future__ import annotations

import subprocess
import sys

import pytest

from agents.errors import ConfigurationError
from agents.models import (
    InferenceClientModel,
    LiteLLMModel,
    ReplayModel,
    default_model_string,
    describe_model_choice,
    load_model,
    parse_model_string,
)


@pytest.mark.parametrize("spec, adapter, model_id", [
    ("openai/gpt-4.1-mini", "litellm", "openai/gpt-4.1-mini"),
    ("anthropic/claude-sonnet-4-5", "litellm", "anthropic/claude-sonnet-4-5"),
    ("ollama/qwen2.5-coder:7b", "litellm", "ollama/qwen2.5-coder:7b"),
    ("mistral/mistral-large-latest", "litellm", "mistral/mistral-large-latest"),
    ("groq/llama-3.3-70b-versatile", "litellm", "groq/llama-3.3-70b-versatile"),
    ("openrouter/qwen/qwen-2.5-coder-32b-instruct", "litellm", "openrouter/qwen/qwen-2.5-coder-32b-instruct"),
    ("gpt-4.1-mini", "litellm", "gpt-4.1-mini"),
    ("litellm:openai/custom", "litellm", "openai/custom"),
    ("hf:Qwen/Qwen2.5-Coder-32B-Instruct", "hf", "Qwen/Qwen2.5-Coder-32B-Instruct"),
    ("transformers:HuggingFaceTB/SmolLM2-1.7B-Instruct", "transformers", "HuggingFaceTB/SmolLM2-1.7B-Instruct"),
    ("replay:path/to/transcript.yaml", "replay", "path/to/transcript.yaml"),
    ("embedded", "embedded", "smollm2"),
    ("embedded:smollm2", "embedded", "smollm2"),
])
def test_model_strings(spec, adapter, model_id):
    assert parse_model_string(spec) == (adapter, model_id)


def test_adapters_built_without_network():
    assert type(load_model("openai/gpt-4.1-mini")) is LiteLLMModel
    assert load_model("anthropic/claude-sonnet-4-5").model_id == "anthropic/claude-sonnet-4-5"
    hf = load_model("hf:Qwen/Qwen2.5-Coder-32B-Instruct")
    assert type(hf) is InferenceClientModel and hf.model_id == "Qwen/Qwen2.5-Coder-32B-Instruct"


def test_replay_string_loads_the_transcript(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("model_id: demo\nreplies:\n  - hello\n")
    model = load_model(f"replay:{path}")
    assert isinstance(model, ReplayModel) and model.generate([]).content == "hello"


@pytest.mark.parametrize("spec, hint", [
    ("foo:bar", "Unknown model prefix 'foo:'"),
    ("ollama:qwen2.5", "Did you mean 'ollama/qwen2.5'"),
    ("Qwen/Qwen2.5-Coder-32B-Instruct", "hf:Qwen/Qwen2.5-Coder-32B-Instruct"),
    ("", "Empty model string"),
    ("hf:", "names no model"),
])
def test_bad_strings_give_configuration_errors(spec, hint):
    with pytest.raises(ConfigurationError) as info:
        load_model(spec)
    assert hint in str(info.value)


def test_secrets_never_in_repr():
    key = "sk-ant-very-secret-value-123"
    for model in (load_model("anthropic/claude-sonnet-4-5", api_key=key),
                  load_model("hf:Qwen/Qwen2.5-Coder-32B-Instruct", token="hf_secretsecret123")):
        assert key not in repr(model) and "hf_secretsecret123" not in repr(model)
        assert key not in str(model)


@pytest.mark.parametrize("env, expected", [
    ({}, "embedded:smollm2"),
    ({"OPENAI_API_KEY": "sk-x"}, "openai/gpt-4.1"),
    ({"ANTHROPIC_API_KEY": "x"}, "anthropic/claude-sonnet-4-5"),
    ({"HF_TOKEN": "hf_x", "OPENAI_API_KEY": "sk-x"}, "hf:Qwen/Qwen2.5-Coder-32B-Instruct"),
    # The app's AGENTDECK_MODEL is the app's setting (ui/config/): the library chooses from provider keys only.
    ({"AGENTDECK_MODEL": "ollama/qwen2.5-coder:7b", "OPENAI_API_KEY": "sk-x"}, "openai/gpt-4.1"),
])
def test_default_model_string(env, expected):
    assert default_model_string(env) == expected


def test_describe_model_choice_never_shows_keys():
    note = describe_model_choice(env={})
    assert "small embedded model" in note and "AGENTDECK_MODEL" in note
    keyed = describe_model_choice(env={"OPENAI_API_KEY": "sk-abcdef123456"})
    assert "openai/gpt-4.1" in keyed and "OPENAI_API_KEY" in keyed and "sk-abcdef" not in keyed
    assert "ANTHROPIC_API_KEY is not set" in describe_model_choice("anthropic/claude-sonnet-4-5", env={})
    assert "set by AGENTDECK_MODEL" in describe_model_choice("ollama/qwen2.5-coder:7b", env={},
                                                             configured="ollama/qwen2.5-coder:7b")
    assert "set by" not in describe_model_choice("ollama/qwen2.5-coder:7b",
                                                 env={"AGENTDECK_MODEL": "ollama/qwen2.5-coder:7b"})


def test_import_is_light_and_offline():
    code = ("import sys, agents.models as m; m.load_model; m.default_model_string(); "
            "print(','.join(k for k in ('litellm', 'torch', 'transformers', 'huggingface_hub') if k in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
