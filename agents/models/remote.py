"""Shared behaviour of adapters that call an OpenAI-style chat API (litellm, huggingface_hub).

Why: generation, streaming, stop-sequence trimming, usage, tool calls, retries and error mapping must
behave the same for every hosted provider; subclasses only say how to send one request.
"""
from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator
from typing import Any

from agents.models.base import Message, Model, ModelDelta, ModelReply, apply_stop_sequences
from agents.models.cancel import abort_stream, current_token, release_stream
from agents.models.openai_format import (
    StreamAssembler,
    check_content_filter,
    prepare_messages,
    reply_from_completion,
    usage_of,
)
from agents.models.retry import ErrorContext, RetryPolicy, call_with_retry, stream_with_retry
from agents.models.streaming import StopFilter


class RemoteChatModel(Model):
    """A model behind a chat-completions API. Secrets live in private attributes and never in repr."""

    supports_native_tools = True
    #: Most APIs accept at most this many stop sequences; the rest are applied locally.
    max_stop_sequences = 4

    def __init__(self, model_id: str, *, retry: RetryPolicy | None = None, max_tokens: int | None = None,
                 temperature: float | None = None, timeout: float | None = 120.0,
                 images: bool | None = None, **request_kwargs: Any) -> None:
        self.model_id = model_id
        self.retry = retry or RetryPolicy()
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.timeout = timeout
        #: None: ask the adapter (`_reads_images`); True/False: the person knows better (a custom endpoint).
        self.images = images
        self.request_kwargs = request_kwargs
        self._stop_supported = True

    @property
    def supports_images(self) -> bool:  # type: ignore[override]
        return self._reads_images() if self.images is None else bool(self.images)

    @property
    def supports_structured_output(self) -> bool:  # type: ignore[override]
        return True  # `response_format` goes to the provider; one that ignores it still gets a parsed reply

    # --- what subclasses provide -------------------------------------------------------------
    def _reads_images(self) -> bool:
        """Whether the model is known to read images (offline knowledge only)."""
        return False

    @abstractmethod
    def _send(self, messages: list[dict[str, Any]], stop: list[str] | None, tools: list[dict[str, Any]] | None,
              stream: bool, **kwargs: Any) -> Any:
        """Send one request; return the response, or an iterator of chunks when `stream`."""

    def _error_context(self) -> ErrorContext:
        return ErrorContext(model_id=self.model_id)

    def _check_ready(self) -> None:
        """Raise a clear error before the first request when the call cannot work (e.g. no API key)."""

    def _refuses_stop(self, exc: BaseException) -> bool:
        """True when the provider rejected the request because of the stop parameter."""
        text = str(exc).lower()
        return "stop" in text and any(word in text for word in ("unsupported", "not supported", "does not support",
                                                                 "unrecognized", "not allowed", "invalid"))

    # --- shared behaviour ---------------------------------------------------------------------
    def _stop_param(self, stop_sequences: list[str] | None) -> list[str] | None:
        if not stop_sequences or not self._stop_supported:
            return None
        return list(stop_sequences[: self.max_stop_sequences])

    def _request(self, messages: list[Message], stop_sequences: list[str] | None,
                 tools: list[dict[str, Any]] | None, stream: bool, kwargs: dict[str, Any]) -> Any:
        prepared = prepare_messages(messages, images=self.supports_images)
        stop = self._stop_param(stop_sequences)
        try:
            return self._send(prepared, stop, tools or None, stream, **kwargs)
        except Exception as exc:
            if stop and self._refuses_stop(exc):
                self._stop_supported = False  # remember, and trim locally from now on
                return self._send(prepared, None, tools or None, stream, **kwargs)
            raise

    def generate(self, messages: list[Message], stop_sequences: list[str] | None = None,
                 tools: list[dict[str, Any]] | None = None, **kwargs: Any) -> ModelReply:
        self._check_ready()
        response = call_with_retry(lambda: self._request(messages, stop_sequences, tools, False, kwargs),
                                   self.retry, self._error_context())
        reply, _ = reply_from_completion(response, messages, self.model_id)
        trimmed = apply_stop_sequences(reply.content, stop_sequences)
        if trimmed != reply.content:
            reply.content = trimmed
        return reply

    def generate_stream(self, messages: list[Message], stop_sequences: list[str] | None = None,
                        tools: list[dict[str, Any]] | None = None, **kwargs: Any) -> Iterator[ModelDelta]:
        self._check_ready()
        assembler = StreamAssembler()
        stop_filter = StopFilter(list(stop_sequences or []))
        cancel = current_token()

        def start() -> Iterator[ModelDelta]:
            nonlocal assembler, stop_filter
            assembler, stop_filter = StreamAssembler(), StopFilter(list(stop_sequences or []))
            response = self._request(messages, stop_sequences, tools, True, kwargs)
            # On Stop, shut the response's socket so a read blocked on a stalled stream returns at once.
            def abort() -> None:
                abort_stream(response)

            forget = cancel.on_cancel(abort) if cancel is not None else (lambda: None)
            try:
                for chunk in response:
                    piece = stop_filter.feed(assembler.add(chunk))
                    if piece:
                        yield ModelDelta(content=piece)
            finally:
                forget()
                release_stream(response)

        yield from stream_with_retry(start, self.retry, self._error_context(), lambda delta: bool(delta.content),
                                     notify=lambda notice: ModelDelta(retry=notice))
        tail = stop_filter.flush()
        if tail:
            yield ModelDelta(content=tail)
        content = stop_filter.text
        tool_calls = assembler.tool_calls()
        check_content_filter(assembler.finish_reason, content, tool_calls, self.model_id)
        reply = ModelReply(content=content, token_usage=usage_of(assembler.usage, messages, content),
                           tool_calls=tool_calls)
        yield ModelDelta(reply=reply)


def openai_request_options(stop: list[str] | None, tools: list[dict[str, Any]] | None,
                           stream: bool) -> dict[str, Any]:
    """The OpenAI-style request fields both hosted adapters send: stop sequences, tools, usage in streams."""
    options: dict[str, Any] = {}
    if stop:
        options["stop"] = stop
    if tools:
        options["tools"] = tools
    if stream:
        options["stream_options"] = {"include_usage": True}
    return options

