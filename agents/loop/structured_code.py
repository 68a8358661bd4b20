"""Structured code steps: the model answers each step with a JSON object `{"thought": ..., "code": ...}`, asked
for through the provider's structured output (a JSON-schema `response_format`; guided decoding for local models,
agents/models/transformers_structured.py), instead of writing a fenced code block.

Why: small and mid-size models keep a JSON shape the provider enforces far more reliably than they keep to a
fence; a reply that is still not the object is told back to the model as a clear error and the run goes on.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from agents.loop.parsing import extract_code

CODE_STEP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"thought": {"type": "string"}, "code": {"type": "string"}},
    "required": ["thought", "code"],
    "additionalProperties": False,
}

#: The OpenAI-style `response_format` litellm and huggingface_hub pass to the provider.
CODE_STEP_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {"name": "code_step", "schema": CODE_STEP_SCHEMA, "strict": True},
}

_JSON_FENCE = re.compile(r"^```(?:json)?[ \t]*\n(.*?)\n?```$", re.DOTALL)


class StructuredReplyError(ValueError):
    """The reply is not the `{"thought", "code"}` object; the message says what is wrong, for the model."""


@dataclass(frozen=True)
class CodeStep:
    thought: str
    code: str


def parse_code_step(text: str) -> CodeStep:
    """The thought and code of a structured reply. Tolerates a ```json fence and text around the object (some
    providers ignore the response format); anything else is a StructuredReplyError."""
    body = text.strip()
    fenced = _JSON_FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    start, end = body.find("{"), body.rfind("}")
    if start == -1 or end < start:
        raise StructuredReplyError("the reply holds no JSON object")
    try:
        value = json.loads(body[start:end + 1], strict=False)  # strict=False: raw newlines inside the code
    except ValueError as exc:
        raise StructuredReplyError(f"the reply is not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise StructuredReplyError("the reply's JSON is not an object")
    code, thought = value.get("code"), value.get("thought", "")
    if not isinstance(code, str):
        raise StructuredReplyError('the object has no "code" string')
    if not isinstance(thought, str):
        raise StructuredReplyError('"thought" must be a string')
    code = code.strip()
    if code.startswith("```"):  # code fenced inside the field: take the block
        code = extract_code(code) or ""
    if not code:
        raise StructuredReplyError('the "code" field is empty')
    return CodeStep(thought.strip(), code)


def as_structured_reply(reply: str, thought: str) -> str:
    """A fenced example reply written as the JSON object the structured prompt asks for."""
    code = extract_code(reply) or reply.strip()
    return json.dumps({"thought": thought, "code": code}, ensure_ascii=False)
