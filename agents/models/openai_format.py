"""Reading and writing the OpenAI chat format shared by litellm and huggingface_hub.

Why: both libraries return OpenAI-shaped responses and stream chunks (as objects or dicts); one
parser keeps content, tool calls and usage handling identical across the two adapters.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agents.errors import ContentFilteredError
from agents.models.base import Message, ModelReply, TokenUsage, ToolCall, estimate_tokens, message_text

_MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")


def get(obj: Any, name: str, default: Any = None) -> Any:
    """Attribute or key access, for objects and dicts alike."""
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def prepare_messages(messages: list[Message], images: bool = True) -> list[dict[str, Any]]:
    """Copy messages into the strict OpenAI shape: known keys only, JSON-string tool arguments.

    With `images=False`, image parts are dropped (for text-only endpoints) and content becomes a string.
    """
    prepared: list[dict[str, Any]] = []
    for message in messages:
        out = {key: message[key] for key in _MESSAGE_KEYS if key in message and message[key] is not None}
        content = out.get("content")
        if isinstance(content, list) and not images:
            out["content"] = message_text(message)
        elif content is None:
            out["content"] = ""
        if out.get("tool_calls"):
            out["tool_calls"] = [_tool_call_to_openai(call) for call in out["tool_calls"]]
        prepared.append(out)
    return prepared


def _tool_call_to_openai(call: Any) -> dict[str, Any]:
    if isinstance(call, ToolCall):
        name, arguments, call_id = call.name, call.arguments, call.id
    else:
        function = get(call, "function") or call
        name, arguments, call_id = get(function, "name"), get(function, "arguments"), get(call, "id")
    encoded = arguments if isinstance(arguments, str) else json.dumps(arguments if arguments is not None else {})
    return {"id": call_id or "", "type": "function", "function": {"name": name, "arguments": encoded}}


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool arguments as a dict, whether given as JSON text or already decoded."""
    if isinstance(raw, dict):
        return raw
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return {"_raw_arguments": str(raw)}
    return value if isinstance(value, dict) else {"value": value}


def parse_tool_calls(raw_calls: Any) -> list[ToolCall]:
    calls = []
    for index, call in enumerate(raw_calls or []):
        function = get(call, "function") or {}
        calls.append(ToolCall(name=str(get(function, "name") or ""),
                              arguments=parse_arguments(get(function, "arguments")),
                              id=str(get(call, "id") or f"call_{index}")))
    return calls


def usage_of(usage: Any, messages: list[Message], output_text: str) -> TokenUsage:
    """Token usage from the provider when it says, else an estimate."""
    prompt = get(usage, "prompt_tokens")
    completion = get(usage, "completion_tokens")
    if prompt is None:
        prompt = sum(estimate_tokens(message_text(m)) + 4 for m in messages)
    if completion is None:
        completion = estimate_tokens(output_text)
    return TokenUsage(int(prompt), int(completion))


def check_content_filter(finish_reason: Any, content: str, tool_calls: list[ToolCall], model_id: str) -> None:
    if finish_reason == "content_filter" and not content and not tool_calls:
        raise ContentFilteredError(
            f"The provider withheld the reply of model '{model_id}' (content filter). Rephrase the task."
        )


def reply_from_completion(response: Any, messages: list[Message], model_id: str) -> tuple[ModelReply, Any]:
    """A ModelReply from a non-streamed completion, with the finish reason."""
    choices = get(response, "choices") or []
    choice = choices[0] if choices else None
    message = get(choice, "message")
    content = get(message, "content") or ""
    if isinstance(content, list):  # some providers return parts
        content = "".join(str(get(part, "text") or "") for part in content)
    tool_calls = parse_tool_calls(get(message, "tool_calls"))
    finish_reason = get(choice, "finish_reason")
    check_content_filter(finish_reason, content, tool_calls, model_id)
    reply = ModelReply(content=content, token_usage=usage_of(get(response, "usage"), messages, content),
                       tool_calls=tool_calls, raw=None)
    return reply, finish_reason


@dataclass
class StreamAssembler:
    """Collects the tool-call fragments, usage and finish reason scattered over stream chunks."""
    _calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    usage: Any = None
    finish_reason: Any = None

    def add(self, chunk: Any) -> str:
        """Take one chunk; return its content text."""
        usage = get(chunk, "usage")
        if usage is not None and get(usage, "prompt_tokens") is not None:
            self.usage = usage
        text = ""
        for choice in get(chunk, "choices") or []:
            if get(choice, "finish_reason"):
                self.finish_reason = get(choice, "finish_reason")
            delta = get(choice, "delta")
            piece = get(delta, "content")
            if piece:
                text += piece if isinstance(piece, str) else "".join(str(get(p, "text") or "") for p in piece)
            for position, call in enumerate(get(delta, "tool_calls") or []):
                index = get(call, "index")
                index = position if index is None else int(index)
                slot = self._calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
                if get(call, "id"):
                    slot["id"] = get(call, "id")
                function = get(call, "function")
                if get(function, "name"):
                    slot["name"] += get(function, "name")
                arguments = get(function, "arguments")
                if arguments:
                    slot["arguments"] += arguments if isinstance(arguments, str) else json.dumps(arguments)
        return text

    def tool_calls(self) -> list[ToolCall]:
        return [ToolCall(name=slot["name"], arguments=parse_arguments(slot["arguments"]), id=slot["id"] or f"call_{i}")
                for i, slot in sorted(self._calls.items())]
