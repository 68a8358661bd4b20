"""LiteLLMModel: every provider litellm knows (OpenAI, Anthropic, Mistral, Groq, OpenRouter, Ollama, ...).

Why lazy: importing litellm takes seconds and, unless told otherwise, fetches a price list from the
network. It is imported on the first call only, with the local model map and telemetry off.
"""
from __future__ import annotations

import os
import threading
from typing import Any

from agents.errors import MissingApiKeyError
from agents.models.errors_mapping import PROVIDER_KEY_ENV, missing_key_message, provider_of
from agents.models.remote import RemoteChatModel, openai_request_options
from agents.models.retry import ErrorContext

_LITELLM_LOCK = threading.Lock()
_LITELLM: Any = None


def import_litellm() -> Any:
    """Import litellm once, offline-safe and quiet: local model map, no telemetry, no callbacks."""
    global _LITELLM
    if _LITELLM is not None:
        return _LITELLM
    with _LITELLM_LOCK:
        if _LITELLM is None:
            os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
            os.environ.setdefault("LITELLM_TELEMETRY", "False")
            import litellm

            litellm.telemetry = False
            litellm.suppress_debug_info = True
            litellm.success_callback = []
            litellm.failure_callback = []
            litellm.callbacks = []
            litellm.num_retries = 0  # AgentDeck retries itself (agents/models/retry.py)
            _LITELLM = litellm
    return _LITELLM


class LiteLLMModel(RemoteChatModel):
    """A chat model reached through litellm, named `provider/model` (e.g. `anthropic/claude-sonnet-4-5`).

    `api_base` points it at any OpenAI-compatible server; `api_key` overrides the provider's key
    variable from the environment. Extra keyword arguments go to `litellm.completion` unchanged.
    """

    def __init__(self, model_id: str, api_base: str | None = None, api_key: str | None = None, **kwargs: Any) -> None:
        super().__init__(model_id, **kwargs)
        self.api_base = api_base
        self.__api_key = api_key  # name-mangled and never printed
        self._context_size: int | None = None
        self._context_looked_up = False

    @property
    def litellm_model(self) -> str:
        """The name passed to litellm: an explicit provider for bare names on a custom api_base,
        and Ollama's chat endpoint (which supports tools) for `ollama/...`."""
        name = self.model_id
        if name.startswith("litellm:"):
            name = name[len("litellm:"):]
        if name.startswith("ollama/"):
            return "ollama_chat/" + name[len("ollama/"):]
        if self.api_base and "/" not in name:
            return "openai/" + name
        return name

    @property
    def context_size(self) -> int | None:
        """From litellm's bundled model map, looked up on first use."""
        if not self._context_looked_up:
            self._context_looked_up = True
            try:
                info = import_litellm().get_model_info(self.litellm_model)
                self._context_size = info.get("max_input_tokens") or info.get("max_tokens")
            except Exception:
                self._context_size = None
        return self._context_size

    @context_size.setter
    def context_size(self, value: int | None) -> None:
        self._context_size, self._context_looked_up = value, True

    def _reads_images(self) -> bool:
        """litellm's bundled model map says which models read images (`supports_vision`); no network."""
        try:
            return bool(import_litellm().supports_vision(model=self.litellm_model))
        except Exception:
            return False

    def _error_context(self) -> ErrorContext:
        provider = provider_of(self.litellm_model)
        return ErrorContext(
            model_id=self.model_id,
            key_env=PROVIDER_KEY_ENV.get(provider),
            endpoint=self.api_base or (provider or "the provider"),
            secrets=tuple(s for s in (self.__api_key,) if s),
        )

    def _check_ready(self) -> None:
        """No key given and none in the environment: say which variable to set, before any request.

        litellm.validate_environment knows each provider's variables; without this check litellm sends
        nothing and reports "InternalServerError" (HTTP 500), which a retry cannot fix.
        """
        if self.__api_key:
            return
        litellm = import_litellm()
        if getattr(litellm, "api_key", None):
            return
        try:
            found = litellm.validate_environment(model=self.litellm_model, api_base=self.api_base)
        except Exception:
            return
        # Only keys: a missing *_API_BASE has a default (Ollama's is localhost) and is not fatal.
        missing = [str(name) for name in (found or {}).get("missing_keys") or []
                   if any(word in str(name).upper() for word in ("KEY", "TOKEN"))]
        alternative = PROVIDER_KEY_ENV.get(provider_of(self.litellm_model))
        if missing and not (alternative and os.environ.get(alternative)):
            raise MissingApiKeyError(missing_key_message(self.model_id, missing))

    def _send(self, messages: list[dict[str, Any]], stop: list[str] | None, tools: list[dict[str, Any]] | None,
              stream: bool, **kwargs: Any) -> Any:
        return import_litellm().completion(**self._params(messages, stop, tools, stream, **kwargs))

    async def _asend(self, messages: list[dict[str, Any]], stop: list[str] | None,
                     tools: list[dict[str, Any]] | None, stream: bool, **kwargs: Any) -> Any:
        """`_send` awaited in the caller's event loop (litellm.acompletion): no thread waits for the provider."""
        return await import_litellm().acompletion(**self._params(messages, stop, tools, stream, **kwargs))

    def _params(self, messages: list[dict[str, Any]], stop: list[str] | None, tools: list[dict[str, Any]] | None,
                stream: bool, **kwargs: Any) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.litellm_model,
            "messages": messages,
            "stream": stream,
            "num_retries": 0,
            "max_retries": 0,
            "drop_params": True,  # models that refuse e.g. `stop` get it dropped; it is trimmed locally
            **self.request_kwargs,
            **kwargs,
        }
        params.update(openai_request_options(stop, tools, stream))
        if self.api_base:
            params["api_base"] = self.api_base
        if self.__api_key:
            params["api_key"] = self.__api_key
        if self.timeout is not None:
            params.setdefault("timeout", self.timeout)
        if self.max_tokens is not None:
            params.setdefault("max_tokens", self.max_tokens)
        if self.temperature is not None:
            params.setdefault("temperature", self.temperature)
        return params
