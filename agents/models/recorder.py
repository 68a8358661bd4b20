"""RecordingModel: wrap any model to save a session's exchanges as a transcript ReplayModel plays back.

Why: a real session (with a paid or slow model) can then be replayed offline, in tests, benchmarks
and demos. The file is `{model_id, recorded_with, exchanges: [{messages, stop_sequences, reply}]}`;
`ReplayModel.from_file` reads the `reply` of each exchange, the messages are kept for inspection.
"""
from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from agents.models.base import Message, Model, ModelDelta, ModelReply


def reply_to_entry(reply: ModelReply) -> dict[str, Any]:
    """A reply in the script format ReplayModel reads."""
    entry: dict[str, Any] = {"content": reply.content}
    if reply.tool_calls:
        entry["tool_calls"] = [{"name": c.name, "arguments": c.arguments, "id": c.id} for c in reply.tool_calls]
    entry["token_usage"] = {"input_tokens": reply.token_usage.input_tokens,
                            "output_tokens": reply.token_usage.output_tokens}
    return entry


class _LiteralDumper(yaml.SafeDumper):  # type: ignore[misc]  # yaml has no type information here (Any)
    """Writes multi-line strings as `|` blocks so transcripts stay readable."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> Any:
    style = "|" if "\n" in value and not any(ch in value for ch in "\r\t") and value == value.rstrip(" ") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_LiteralDumper.add_representer(str, _represent_str)


class RecordingModel(Model):
    """Delegates to `model` and records every exchange; `save(path)` writes YAML (or JSON by suffix).

    With `path` given, the transcript is rewritten (atomically) after every exchange, so a crashed
    session still leaves a usable recording.
    """

    def __init__(self, model: Model, path: str | os.PathLike[str] | None = None) -> None:
        self.model = model
        self.path = Path(path) if path is not None else None
        self.exchanges: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    # Everything the agent reads from a model comes from the wrapped one: read-only properties where Model
    # declares plain attributes (hence the override ignores).
    @property
    def model_id(self) -> str:  # type: ignore[override]
        return self.model.model_id

    @property
    def supports_native_tools(self) -> bool:  # type: ignore[override]
        return self.model.supports_native_tools

    @property
    def supports_images(self) -> bool:  # type: ignore[override]
        return bool(getattr(self.model, "supports_images", False))

    @property
    def supports_structured_output(self) -> bool:  # type: ignore[override]
        return bool(getattr(self.model, "supports_structured_output", False))

    @property
    def context_size(self) -> int | None:  # type: ignore[override]
        return self.model.context_size

    @property
    def prompt_style(self) -> str:  # type: ignore[override]
        return getattr(self.model, "prompt_style", "default")

    def count_tokens(self, messages: list[Message]) -> int:
        return self.model.count_tokens(messages)

    def __repr__(self) -> str:
        return f"RecordingModel({self.model!r})"

    def _record(self, messages: list[Message], stop_sequences: list[str] | None, reply: ModelReply) -> None:
        exchange = {"messages": json.loads(json.dumps(messages, default=str)),
                    "stop_sequences": list(stop_sequences or []), "reply": reply_to_entry(reply)}
        with self._lock:
            self.exchanges.append(exchange)
            if self.path is not None:
                self._write(self.path)

    def generate(self, messages: list[Message], stop_sequences: list[str] | None = None,
                 tools: list[dict[str, Any]] | None = None, **kwargs: Any) -> ModelReply:
        reply = self.model.generate(messages, stop_sequences=stop_sequences, tools=tools, **kwargs)
        self._record(messages, stop_sequences, reply)
        return reply

    def generate_stream(self, messages: list[Message], stop_sequences: list[str] | None = None,
                        tools: list[dict[str, Any]] | None = None, **kwargs: Any) -> Iterator[ModelDelta]:
        for delta in self.model.generate_stream(messages, stop_sequences=stop_sequences, tools=tools, **kwargs):
            if delta.reply is not None:
                self._record(messages, stop_sequences, delta.reply)
            yield delta

    def transcript(self) -> dict[str, Any]:
        with self._lock:
            return {"model_id": f"replay:{self.model.model_id}", "recorded_with": self.model.model_id,
                    "exchanges": [dict(exchange) for exchange in self.exchanges]}

    def save(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Write the transcript (YAML, or JSON when the name ends in .json) and return its path."""
        target = Path(path) if path is not None else self.path
        if target is None:
            raise ValueError("RecordingModel.save needs a path (or give one to the constructor).")
        with self._lock:
            self._write(target)
        return target

    def _write(self, target: Path) -> None:
        data = {"model_id": f"replay:{self.model.model_id}", "recorded_with": self.model.model_id,
                "exchanges": self.exchanges}
        if target.suffix.lower() == ".json":
            text = json.dumps(data, indent=2, ensure_ascii=False)
        else:
            text = yaml.dump(data, Dumper=_LiteralDumper, sort_keys=False, allow_unicode=True, width=120)
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(prefix=f".{target.name}.", dir=str(target.parent))
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temp, target)
