"""The model interface every adapter implements, and the data it exchanges.

Messages are plain dicts `{"role": ..., "content": ...}` whose content is a string or a list of
`{"type": "text", "text": ...}` / `{"type": "image_url", "image_url": {"url": ...}}` parts.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]


@dataclass
class TokenUsage:
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens)


@dataclass
class ToolCall:
    """One call of a tool requested by the model, native or parsed from text."""
    name: str
    arguments: dict[str, Any]
    id: str = ""


@dataclass
class ModelReply:
    content: str
    token_usage: TokenUsage = field(default_factory=TokenUsage)
    tool_calls: list[ToolCall] = field(default_factory=list)
    raw: Any = None


@dataclass
class RetryNotice:
    """A model call failed for a passing reason and is about to be tried again after `wait_s` seconds.

    Why a notice: the person should see why nothing is happening (a rate limit may ask for a minute), and
    a stream cut part-way is restarted from scratch, so consumers must drop the text shown so far when
    `discarded_text` is true.
    """
    reason: str
    category: str
    attempt: int  # the number of this retry, from 1
    max_retries: int
    wait_s: float
    retry_after_s: float | None = None  # what the provider asked for (before the cap), if it said
    discarded_text: bool = False


@dataclass
class ModelDelta:
    """A piece of a streamed reply. The last delta of a stream carries the assembled `reply`; a delta with
    `retry` says the call is being retried (and maybe that the text so far is void)."""
    content: str = ""
    reply: ModelReply | None = None
    retry: RetryNotice | None = None


def message_text(message: Message) -> str:
    """The text of a message whatever its content shape (string or list of parts)."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


#: What one image part is counted as in a prompt's token estimate.
IMAGE_TOKENS = 765


def image_count(message: Message) -> int:
    content = message.get("content")
    if not isinstance(content, list):
        return 0
    return sum(1 for part in content if isinstance(part, dict) and part.get("type") == "image_url")


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate (about 4 characters per token for English and code)."""
    return (len(text) + 3) // 4


def apply_stop_sequences(text: str, stop_sequences: list[str] | None) -> str:
    """Cut `text` at the first stop sequence, for backends that ignore the parameter."""
    if not stop_sequences:
        return text
    cut = len(text)
    for stop in stop_sequences:
        if stop:
            index = text.find(stop)
            if index != -1:
                cut = min(cut, index)
    return text[:cut]


class Model(ABC):
    """A chat model. Adapters override `generate`, and `generate_stream` where they can stream."""

    model_id: str = "model"
    #: True when the adapter passes `tools=` to the provider and returns native tool calls.
    supports_native_tools: bool = False
    #: Known context size in tokens, or None when unknown.
    context_size: int | None = None
    #: Which prompt family suits the model: "default", or "tiny" for very small local models.
    prompt_style: str = "default"
    #: True when the model reads `image_url` parts (a vision model); an agent refuses a task's images otherwise
    #: and gives it no observation images.
    supports_images: bool = False
    #: True when a call may pass `response_format` (a JSON schema) and the reply follows it: the provider's
    #: structured output, or guided decoding for local models (the structured CodeAgent asks for it).
    supports_structured_output: bool = False

    @abstractmethod
    def generate(
        self,
        messages: list[Message],
        stop_sequences: list[str] | None = None,
        tools: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> ModelReply:
        """Return the whole reply to `messages`."""

    def generate_stream(
        self,
        messages: list[Message],
        stop_sequences: list[str] | None = None,
        tools: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> Iterator[ModelDelta]:
        """Yield the reply in pieces; the default yields it in one piece."""
        reply = self.generate(messages, stop_sequences=stop_sequences, tools=tools, **kwargs)
        if reply.content:
            yield ModelDelta(content=reply.content)
        yield ModelDelta(reply=reply)

    def count_tokens(self, messages: list[Message]) -> int:
        """Tokens `messages` would take; adapters with a tokenizer override this. An image part counts as
        IMAGE_TOKENS (providers charge by size; this is a 1024-pixel picture's usual cost)."""
        return sum(estimate_tokens(message_text(m)) + 4 + IMAGE_TOKENS * image_count(m) for m in messages)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_id!r})"
