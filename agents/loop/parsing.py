"""Reading actions out of model replies: code blocks for the CodeAgent, JSON calls for the ToolCallingAgent."""
from __future__ import annotations

import json
import re
from typing import Any

from agents.models.base import ToolCall

_FENCED = re.compile(r"```(?:python|py|python3)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)
_TAGGED = re.compile(r"<code>\s*(.*?)\s*(?:</code>|\Z)", re.DOTALL)


def extract_code(text: str) -> str | None:
    """The Python code in a reply: all ```python fenced blocks (joined), else <code>…</code> blocks.

    A block left open at the end of the reply (cut by a stop sequence) still counts.
    """
    fenced = [block.strip() for block in _FENCED.findall(text) if block.strip()]
    # A ``` fence opening a non-python language (```json, ```text) is not code.
    fenced = [block for block in fenced if not _looks_like_other_language(block)]
    if fenced:
        return "\n\n".join(fenced)
    tagged = [block.strip() for block in _TAGGED.findall(text) if block.strip()]
    if tagged:
        return "\n\n".join(tagged)
    return None


def _looks_like_other_language(block: str) -> bool:
    first = block.lstrip()[:1]
    return first in ("{", "[") and _is_json(block)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def parse_tool_calls(text: str) -> list[ToolCall]:
    """JSON actions in a reply: objects with `name` (or `tool`) and `arguments` (or `args`), anywhere in the text."""
    calls: list[ToolCall] = []
    decoder = json.JSONDecoder()
    index = 0
    while (start := text.find("{", index)) != -1:
        try:
            obj, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            index = start + 1
            continue
        index = end
        call = _as_call(obj, len(calls))
        if call is not None:
            calls.append(call)
    return calls


def _as_call(obj: Any, position: int) -> ToolCall | None:
    if not isinstance(obj, dict):
        return None
    name = obj.get("name", obj.get("tool", obj.get("tool_name")))
    if not isinstance(name, str):
        return None
    arguments = obj.get("arguments", obj.get("args", obj.get("parameters", {})))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            arguments = {"answer": arguments} if name == "final_answer" else {"input": arguments}
    if not isinstance(arguments, dict):
        arguments = {"answer": arguments} if name == "final_answer" else {}
    return ToolCall(name=name, arguments=arguments, id=f"text_call_{position}")
