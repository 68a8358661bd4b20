"""Turn agent messages into plain text chat turns a local chat template accepts, and into the prompt's text.

Why: local chat templates usually know only system/user/assistant with string content, and many
insist on alternating turns. Tool results and tool calls are written out as text instead.
"""
from __future__ import annotations

import json
from typing import Any

from agents.models.base import Message, message_text


def _tool_calls_text(tool_calls: list[Any]) -> str:
    lines = []
    for call in tool_calls:
        function = call.get("function", call) if isinstance(call, dict) else call
        name = function.get("name") if isinstance(function, dict) else getattr(function, "name", "")
        arguments = function.get("arguments") if isinstance(function, dict) else getattr(function, "arguments", {})
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        lines.append(f"Calling tool {name} with arguments {arguments}")
    return "\n".join(lines)


def to_text_turns(messages: list[Message], merge_system: bool = False) -> list[dict[str, str]]:
    """Plain `{role, content}` turns: images dropped, tool messages as user turns, same roles merged.

    With `merge_system`, system text is folded into the first user turn (for templates without system).
    """
    turns: list[dict[str, str]] = []
    system_parts: list[str] = []
    for message in messages:
        role = message.get("role", "user")
        text = message_text(message)
        if role == "tool":
            role, text = "user", f"Tool result:\n{text}"
        elif role == "assistant" and message.get("tool_calls"):
            text = "\n".join(part for part in (text, _tool_calls_text(message["tool_calls"])) if part)
        elif role not in ("system", "user", "assistant"):
            role = "user"
        if role == "system" and merge_system:
            system_parts.append(text)
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + text
        else:
            turns.append({"role": role, "content": text})
    if system_parts:
        prefix = "\n\n".join(system_parts)
        if turns and turns[0]["role"] == "user":
            turns[0]["content"] = prefix + "\n\n" + turns[0]["content"]
        else:
            turns.insert(0, {"role": "user", "content": prefix})
    return turns


def plain_prompt(turns: list[dict[str, str]]) -> str:
    """A prompt for tokenizers without a chat template."""
    body = "".join(f"{turn['role'].capitalize()}: {turn['content']}\n\n" for turn in turns)
    return body + "Assistant:"


def render_prompt(tokenizer: Any, messages: list[Message], generation_prompt: bool = True) -> str:
    """The prompt as text: the tokenizer's chat template, or plain turns for a tokenizer without one."""
    turns = to_text_turns(messages)
    if not getattr(tokenizer, "chat_template", None):
        return plain_prompt(turns)
    try:  # with tokenize=False the template gives the text
        text: str = tokenizer.apply_chat_template(turns, add_generation_prompt=generation_prompt, tokenize=False)
    except Exception:  # a template that refuses a system turn (or some other shape): system folded into user
        turns = to_text_turns(messages, merge_system=True)
        text = tokenizer.apply_chat_template(turns, add_generation_prompt=generation_prompt, tokenize=False)
    return text
