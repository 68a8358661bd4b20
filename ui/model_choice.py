"""Which model strings this server offers and can use: the picker's choices, why a string is refused, the
note shown under the picker.

Kept apart from the settings (ui/settings.py), which validate what a visitor sends against this offer, and
from the agent factory (ui/agent_factory.py), which loads the chosen model. Checked without loading a model or
calling anyone.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

FALLBACK_MODEL = "embedded:smollm2"
KNOWN_MODEL_STRINGS = ("embedded:smollm2", "openai/gpt-4.1-mini", "openai/gpt-4.1", "anthropic/claude-sonnet-4-5",
                       "hf:Qwen/Qwen2.5-Coder-32B-Instruct", "ollama/qwen2.5-coder:7b")
LOCAL_SERVER_ENV = {"ollama": "OLLAMA_API_BASE"}


def is_operator_only_model(model: str) -> bool:
    """Model strings that reach the server's files, downloads or arbitrary hosts: only the operator sets them."""
    text = model.strip().lower()
    return (text.startswith(("replay:", "transformers:", "/", ".", "~")) or "://" in text or "@" in text
            or "api_base" in text or "\\" in text or ".." in text)


def default_model() -> str:
    try:
        from agents.models.selection import default_model_string
        return str(default_model_string())
    except Exception:  # the selection module is optional: fall back to the embedded model
        return FALLBACK_MODEL


def model_problem(model: str) -> str | None:
    """Why a model string cannot be used here (unknown form, provider or embedded model, its wheel missing,
    a missing transcript), or None. Checked without loading the model or calling anyone."""
    from agents.errors import ConfigurationError
    from agents.models.loader import check_model_string

    try:
        check_model_string(model)
    except ConfigurationError as exc:
        return str(exc)
    return None


def model_note(model: str, configured: str = "") -> str:
    """A short note about a model choice: what the embedded model can do, a refused string's reason.
    `configured`: the operator's AGENTDECK_MODEL as set ("" when chosen from the keys)."""
    problem = model_problem(model)
    if problem:
        return f"⛔ **This model cannot be used**: {problem}"
    if model.startswith("hf:") and not os.environ.get("HF_TOKEN", "").strip():
        return ("ℹ️ A Hugging Face model: sign in with Hugging Face to use it with your own account's inference "
                "credits (the server has no key of its own).")
    try:
        from agents.models.selection import describe_model_choice
        note = describe_model_choice(model, configured=configured or None)
        if note:
            return str(note)
    except Exception:
        pass
    if model.split(":", 1)[0] == "embedded":
        return "ℹ️ This is the small embedded model that runs on this machine: fine for trying things, " \
               "weak at real analysis. Set an API key and pick a hosted model for better results."
    if model.startswith("replay:"):
        return "ℹ️ Replay model: plays back a scripted transcript (offline demos and tests)."
    return ""


def model_choices(configured: str, hf_login: bool) -> list[str]:
    """The `configured` model first, then the embedded one and the defaults this server can reach: a hosted
    model only when its key is set (an `hf:` one also when visitors sign in with their own, `hf_login`), a
    local server such as Ollama only when its address is configured. Offering the rest would only produce
    errors."""
    choices = [configured]
    try:
        from agents.models import selection

        if selection.embedded_available():  # a lean Space has no local models: never offer what cannot run
            choices.append(selection.EMBEDDED)
        choices += [model for _, model in getattr(selection, "KEYED_DEFAULTS", ())]
    except Exception:
        pass
    choices += compatible_models()
    choices += [m for m in KNOWN_MODEL_STRINGS if not m.startswith("embedded") or m in choices]
    return [m for m in dict.fromkeys(choices) if m == configured or reachable_model(m, hf_login)]


def compatible_models() -> list[str]:
    """The models of the operator's OpenAI-compatible server (agents/models/compatible.py), as model strings."""
    from agents.errors import ConfigurationError
    from agents.models.compatible import server_from_env

    try:
        server = server_from_env()
    except ConfigurationError:
        return []  # the start-up check says why (ui/settings.py checks the configured models)
    return server.model_strings() if server is not None else []


def reachable_model(model_string: str, hf_login: bool = False, env: Mapping[str, str] | None = None) -> bool:
    """Whether this server holds what `model_string` needs: its key, a sign-in, or a local server's address."""
    env = os.environ if env is None else env
    if model_string.startswith("embedded"):
        return True
    if model_string.startswith("hf:") and hf_login:
        return True
    if model_string.startswith("openai-compatible:"):
        from agents.errors import ConfigurationError
        from agents.models.compatible import server_from_env

        try:
            return server_from_env(env) is not None
        except ConfigurationError:
            return False
    provider = model_string.split("/", 1)[0].lower() if "/" in model_string else ""
    if provider in LOCAL_SERVER_ENV:
        return bool((env.get(LOCAL_SERVER_ENV[provider]) or "").strip())
    from agents.models.selection import key_variable

    variable = key_variable(model_string)
    return variable is None or bool((env.get(variable) or "").strip())
