"""InferenceClientModel: Hugging Face inference providers through huggingface_hub.InferenceClient.

Why: with only HF_TOKEN set (the usual case inside a Space) this reaches strong open models with no
other account. It shares streaming, stop, usage, retry and error handling with LiteLLMModel.
"""
from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any, cast

from agents.models.remote import RemoteChatModel, openai_request_options
from agents.models.retry import ErrorContext

DEFAULT_HF_MODEL = "Qwen/Qwen2.5-Coder-32B-Instruct"

#: Context windows of models commonly used through inference providers (tokens).
KNOWN_CONTEXT_SIZES = {
    "Qwen/Qwen2.5-Coder-32B-Instruct": 32768,
    "Qwen/Qwen2.5-72B-Instruct": 32768,
    "Qwen/Qwen3-Coder-480B-A35B-Instruct": 262144,
    "meta-llama/Llama-3.3-70B-Instruct": 131072,
    "meta-llama/Llama-3.1-8B-Instruct": 131072,
    "deepseek-ai/DeepSeek-V3": 131072,
    "deepseek-ai/DeepSeek-R1": 131072,
    "mistralai/Mistral-7B-Instruct-v0.3": 32768,
    "HuggingFaceTB/SmolLM3-3B": 65536,
}


#: Words in a repo id that mark a vision-language model (the Hub's inference API says nothing offline).
VISION_NAME_MARKS = ("-vl", "vl-", "vision", "llava", "idefics", "smolvlm", "pixtral", "gemma-3-", "paligemma",
                     "qwen2.5-omni", "llama-4-")


class InferenceClientModel(RemoteChatModel):
    """`hf:<repo id>` models. `provider` picks the inference provider ("auto" lets the Hub choose);
    `base_url` targets a dedicated endpoint or any OpenAI-compatible server instead."""

    def __init__(self, model_id: str = DEFAULT_HF_MODEL, provider: str | None = None, token: str | None = None,
                 base_url: str | None = None, api_key: str | None = None, api_base: str | None = None,
                 **kwargs: Any) -> None:
        if model_id.startswith("hf:"):
            model_id = model_id[3:]
        super().__init__(model_id, **kwargs)
        self.provider = provider or os.environ.get("HF_INFERENCE_PROVIDER") or "auto"
        self.base_url = base_url or api_base  # `api_base` as for LiteLLMModel
        self.__token = token or api_key or os.environ.get("HF_TOKEN") or None
        self.context_size = KNOWN_CONTEXT_SIZES.get(model_id)
        self._client: Any = None

    def _reads_images(self) -> bool:
        """By the repo id's name (`-VL`, `Vision`, `llava`, ...); `images=True` says so for any other."""
        name = self.model_id.lower()
        return any(mark in name for mark in VISION_NAME_MARKS)

    def _make_client(self, asynchronous: bool = False) -> Any:
        from huggingface_hub import AsyncInferenceClient, InferenceClient

        client = AsyncInferenceClient if asynchronous else InferenceClient
        if self.base_url:
            return client(base_url=self.base_url, api_key=self.__token, timeout=self.timeout)
        # The provider is the person's string; huggingface_hub checks it against the providers it knows.
        return client(provider=cast(Any, self.provider), token=self.__token, timeout=self.timeout)

    def _error_context(self) -> ErrorContext:
        return ErrorContext(model_id=self.model_id, key_env="HF_TOKEN",
                            endpoint=self.base_url or f"Hugging Face inference (provider {self.provider})",
                            secrets=tuple(s for s in (self.__token,) if s))

    def _send(self, messages: list[dict[str, Any]], stop: list[str] | None, tools: list[dict[str, Any]] | None,
              stream: bool, **kwargs: Any) -> Any:
        if self._client is None:
            self._client = self._make_client()
        return self._client.chat_completion(**self._params(messages, stop, tools, stream, **kwargs))

    async def _asend(self, messages: list[dict[str, Any]], stop: list[str] | None,
                     tools: list[dict[str, Any]] | None, stream: bool, **kwargs: Any) -> Any:
        """`_send` awaited in the caller's event loop (AsyncInferenceClient; a client per call: its HTTP session
        belongs to the loop it was made in, and is closed when the reply ends)."""
        client = self._make_client(asynchronous=True)
        try:
            response = await client.chat_completion(**self._params(messages, stop, tools, stream, **kwargs))
        except BaseException:
            await client.close()
            raise
        if not stream:
            await client.close()
            return response
        return _closing(response, client)

    def _params(self, messages: list[dict[str, Any]], stop: list[str] | None, tools: list[dict[str, Any]] | None,
                stream: bool, **kwargs: Any) -> dict[str, Any]:
        params: dict[str, Any] = {"messages": messages, "stream": stream, **self.request_kwargs, **kwargs}
        if not self.base_url:
            params["model"] = self.model_id
        params.update(openai_request_options(stop, tools, stream))
        if self.max_tokens is not None:
            params.setdefault("max_tokens", self.max_tokens)
        if self.temperature is not None:
            params.setdefault("temperature", self.temperature)
        return params


async def _closing(chunks: AsyncIterator[Any], client: Any) -> AsyncIterator[Any]:
    """The streamed chunks, then the client closed (also when the reader stops early or is cancelled)."""
    try:
        async for chunk in chunks:
            yield chunk
    finally:
        await client.close()
