"""ReplayModel: plays back scripted replies. It drives the tests, the benchmarks and the offline demo."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from agents.errors import ConfigurationError, ReplayExhaustedError
from agents.models.base import (
    Message,
    Model,
    ModelDelta,
    ModelReply,
    TokenUsage,
    ToolCall,
    apply_stop_sequences,
    estimate_tokens,
    message_text,
)

ScriptEntry = str | dict[str, Any]


class ReplayModel(Model):
    """Answers each call with the next scripted reply and records the messages it was sent in `.calls`.

    A script entry is a reply string, or a dict with `content` and optionally `tool_calls`
    (a list of `{"name", "arguments", "id"}`), `token_usage` (`{"input_tokens", "output_tokens"}`).
    `prompt_style`: the family of model it stands in for ("tiny": the embedded model's prompts and answer checks).
    """

    def __init__(self, replies: list[ScriptEntry], model_id: str = "replay", chunk_size: int = 16,
                 supports_images: bool = True, supports_structured_output: bool = True,
                 prompt_style: str | None = None) -> None:
        if isinstance(replies, (str, dict)) or not isinstance(replies, (list, tuple)):
            raise ConfigurationError("ReplayModel expects a list of replies (strings or dicts).")
        self.replies: list[ScriptEntry] = list(replies)
        self.model_id = model_id
        self.chunk_size = max(1, chunk_size)
        self.calls: list[list[Message]] = []
        #: Each call's options (e.g. `response_format`), by position in `calls`.
        self.call_options: list[dict[str, Any]] = []
        # A stand-in for any model: it reads images (its `calls` record the parts) and takes a response format.
        self.supports_images = supports_images
        self.supports_structured_output = supports_structured_output
        self.supports_native_tools = any(isinstance(r, dict) and r.get("tool_calls") for r in self.replies)
        if prompt_style is not None:  # else the class's (a subclass may stand in for a family)
            self.prompt_style = prompt_style

    @classmethod
    def from_file(cls, path: str | Path, **kwargs: Any) -> ReplayModel:
        """Load a YAML or JSON transcript: a list of replies, or a mapping with a `replies` list (and optionally
        `model_id` and `prompt_style`)."""
        file_path = Path(path)
        if not file_path.is_file():
            raise ConfigurationError(f"Replay transcript not found: {file_path}. Give the path of a YAML or JSON file.")
        text = file_path.read_text(encoding="utf-8")
        try:
            data = json.loads(text) if file_path.suffix.lower() == ".json" else yaml.safe_load(text)
        except (json.JSONDecodeError, yaml.YAMLError) as exc:
            raise ConfigurationError(f"Replay transcript {file_path} is not valid YAML/JSON: {exc}") from exc
        if isinstance(data, dict):
            kwargs.setdefault("model_id", str(data.get("model_id", f"replay:{file_path.name}")))
            if isinstance(data.get("prompt_style"), str):
                kwargs.setdefault("prompt_style", data["prompt_style"])
            data = data.get("replies", data.get("exchanges"))
            if data and isinstance(data[0], dict) and "reply" in data[0]:
                data = [exchange["reply"] for exchange in data]
        if not isinstance(data, list) or not data:
            raise ConfigurationError(
                f"Replay transcript {file_path} must be a non-empty list of replies (or a mapping with `replies`)."
            )
        kwargs.setdefault("model_id", f"replay:{file_path.name}")
        return cls(data, **kwargs)

    @property
    def remaining(self) -> int:
        return len(self.replies) - len(self.calls)

    def _next_reply(self, messages: list[Message], stop_sequences: list[str] | None,
                    options: dict[str, Any] | None = None) -> ModelReply:
        index = len(self.calls)
        self.calls.append(list(messages))
        self.call_options.append(dict(options or {}))
        if index >= len(self.replies):
            raise ReplayExhaustedError(
                f"The replay script has {len(self.replies)} replies and call {index + 1} asked for another. "
                "Add replies to the script or lower max_steps."
            )
        entry = self.replies[index]
        if isinstance(entry, str):
            content, tool_calls, usage = entry, [], None
        elif isinstance(entry, dict):
            content = str(entry.get("content") or "")
            tool_calls = [
                ToolCall(name=c["name"], arguments=dict(c.get("arguments") or {}),
                         id=c.get("id") or f"call_{index}_{i}")
                for i, c in enumerate(entry.get("tool_calls") or [])
            ]
            usage = entry.get("token_usage")
        else:
            raise ConfigurationError(
                f"Replay entry {index + 1} must be a string or a mapping, not {type(entry).__name__}.")
        content = apply_stop_sequences(content, stop_sequences)
        if usage:
            token_usage = TokenUsage(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)))
        else:
            prompt_tokens = sum(estimate_tokens(message_text(m)) for m in messages)
            token_usage = TokenUsage(prompt_tokens, estimate_tokens(content))
        return ModelReply(content=content, token_usage=token_usage, tool_calls=tool_calls)

    def generate(self, messages: list[Message], stop_sequences: list[str] | None = None,
                 tools: list[dict[str, Any]] | None = None, **kwargs: Any) -> ModelReply:
        return self._next_reply(messages, stop_sequences, kwargs)

    def generate_stream(self, messages: list[Message], stop_sequences: list[str] | None = None,
                        tools: list[dict[str, Any]] | None = None, **kwargs: Any) -> Iterator[ModelDelta]:
        reply = self._next_reply(messages, stop_sequences, kwargs)
        text = reply.content
        for start in range(0, len(text), self.chunk_size):
            yield ModelDelta(content=text[start:start + self.chunk_size])
        yield ModelDelta(reply=reply)
