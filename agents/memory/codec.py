"""Encoding memory steps and arbitrary values as plain JSON data, and decoding them with checks.

Values that may be anything (final answers, tool arguments, decisions) are stored as `{"json": value}`
when they are plain JSON, else as `{"type": "<qualified type name>", "repr": "..."}` and load back as
`StoredValue`. Decoding validates every field and raises MemoryFileError naming the step.
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any

from agents.errors import MemoryFileError
from agents.memory.steps import STEP_TYPES, MemoryStep, Timing
from agents.models.base import TokenUsage, ToolCall

MAX_REPR_CHARS = 100_000
VALUE_FIELDS = {"action_output", "output"}
#: Lists of plain records (dicts of JSON values): decisions made in a step, tool calls as they went.
RECORD_FIELDS = {"decisions", "call_records"}
OPTIONAL_TEXT = {"code", "error", "error_type"}
_IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


# -- values that may not be JSON ---------------------------------------------------------------------
@dataclass(frozen=True)
class StoredValue:
    """A value that was not JSON when saved (a DataFrame, a figure, ...): its type and repr."""
    type_name: str
    text: str

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__


def is_json(value: Any, depth: int = 0) -> bool:
    if depth > 64:
        return False
    if value is None or isinstance(value, (bool, str)):
        return True
    if isinstance(value, int):
        return type(value) is int
    if isinstance(value, float):
        return type(value) is float and math.isfinite(value)
    if type(value) is list:
        return all(is_json(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(isinstance(k, str) and is_json(v, depth + 1) for k, v in value.items())
    return False


def _safe_repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ must not stop a save
        text = f"<{type(value).__name__}: repr failed: {exc}>"
    if len(text) > MAX_REPR_CHARS:
        text = text[:MAX_REPR_CHARS] + f"... [{len(text) - MAX_REPR_CHARS} more characters]"
    return text


def encode_value(value: Any) -> dict[str, Any]:
    """`{"json": value}` for plain JSON values, else `{"type": "<module.Class>", "repr": "..."}`."""
    if isinstance(value, StoredValue):
        return {"type": value.type_name, "repr": value.text}
    if is_json(value):
        return {"json": value}
    kind = type(value)
    return {"type": f"{kind.__module__}.{kind.__qualname__}", "repr": _safe_repr(value)}


def decode_value(data: Any) -> Any:
    if isinstance(data, dict) and set(data) == {"json"}:
        return data["json"]
    if isinstance(data, dict) and set(data) == {"type", "repr"} and all(isinstance(v, str) for v in data.values()):
        return StoredValue(data["type"], data["repr"])
    raise MemoryFileError(f"A stored value has an unknown shape: {str(data)[:80]!r}.")


def json_safe(value: Any, depth: int = 0) -> Any:
    """Messages and similar: keep JSON as is, turn any odd leaf into its repr."""
    if is_json(value, depth):
        return value
    if isinstance(value, (list, tuple)):
        return [json_safe(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(k): json_safe(v, depth + 1) for k, v in value.items()}
    return _safe_repr(value)


# -- steps -------------------------------------------------------------------------------------------
def loaded_prompt_length(step: MemoryStep) -> int:
    """How many prompt messages a step loaded by `step_from_dict` was sent (its prompt snapshot is not saved,
    only its length); 0 for a step made in this process."""
    length = getattr(step, "_model_input_length", 0)
    return length if isinstance(length, int) else 0


def step_to_dict(step: MemoryStep) -> dict[str, Any]:
    """One step as a JSON-safe dict (extra attributes set on the step are kept, tagged as values)."""
    field_names = {f.name for f in dataclasses.fields(step)}
    data: dict[str, Any] = {"step_type": step.step_type}
    extras: dict[str, Any] = {}
    for key, value in vars(step).items():
        if key == "step_type" or key.startswith("_"):
            continue
        if key not in field_names:
            extras[key] = encode_value(value)
        elif key == "model_input_messages":
            data["model_input_length"] = len(value) if value else loaded_prompt_length(step)
        elif key in ("messages", "history"):
            data[key] = json_safe(list(value))
        elif isinstance(value, TokenUsage):
            data[key] = {"input_tokens": value.input_tokens, "output_tokens": value.output_tokens}
        elif isinstance(value, Timing):
            data[key] = {"start_time": value.start_time, "end_time": value.end_time}
        elif key == "tool_calls":
            data[key] = [{"id": c.id, "name": c.name,
                          "arguments": {str(k): encode_value(v) for k, v in c.arguments.items()}}
                         for c in value]
        elif key in RECORD_FIELDS:
            data[key] = [encode_value(d) for d in value]
        elif key in VALUE_FIELDS:
            data[key] = encode_value(value)
        else:
            data[key] = json_safe(value)
    if extras:
        data["extra"] = extras
    return data


def field_error(index: int, message: str) -> MemoryFileError:
    return MemoryFileError(f"Step {index + 1} of the memory document is invalid: {message}.")


def _check_messages(value: Any, index: int, key: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise field_error(index, f"{key} must be a list")
    for message in value:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str) \
                or not isinstance(message.get("content", ""), (str, list, type(None))):
            raise field_error(index, f"{key} holds something that is not a chat message")
    return value


def _number(value: Any, index: int, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise field_error(index, f"{key} must be a number")
    return value


def step_from_dict(data: Any, index: int = 0) -> MemoryStep:
    if not isinstance(data, dict):
        raise field_error(index, "not an object")
    step_type = data.get("step_type")
    cls = STEP_TYPES.get(step_type) if isinstance(step_type, str) else None
    if cls is None:
        raise field_error(index, f"unknown step type {step_type!r}")
    step = cls()
    fields_by_name = {f.name: f for f in dataclasses.fields(cls)}
    for key, value in data.items():
        if key == "model_input_length":
            # Only a loaded step has it (no prompt snapshot to measure): see `loaded_prompt_length`.
            step._model_input_length = int(_number(value, index, key))  # type: ignore[attr-defined]
            continue
        if key == "step_type":
            continue
        if key == "extra":
            if not isinstance(value, dict):
                raise field_error(index, "extra must be an object")
            for name, stored in value.items():
                if not _IDENTIFIER.match(name) or name in fields_by_name or hasattr(type(step), name):
                    raise field_error(index, f"extra attribute {name!r} is not allowed")
                setattr(step, name, decode_value(stored))
            continue
        if key not in fields_by_name:
            raise field_error(index, f"unknown field {key!r} for a {step_type} step")
        default = getattr(step, key)
        if key in ("messages", "history"):
            value = _check_messages(value, index, key)
        elif isinstance(default, TokenUsage):
            if not isinstance(value, dict):
                raise field_error(index, f"{key} must be an object")
            value = TokenUsage(int(_number(value.get("input_tokens", 0), index, key)),
                               int(_number(value.get("output_tokens", 0), index, key)))
        elif isinstance(default, Timing):
            if not isinstance(value, dict):
                raise field_error(index, f"{key} must be an object")
            value = Timing(_number(value.get("start_time", 0.0), index, key),
                           _number(value.get("end_time", 0.0), index, key))
        elif key == "tool_calls":
            if not isinstance(value, list) or not all(isinstance(c, dict) and isinstance(c.get("name"), str)
                                                      and isinstance(c.get("arguments", {}), dict) for c in value):
                raise field_error(index, "tool_calls must be a list of {id, name, arguments}")
            value = [ToolCall(name=c["name"], id=str(c.get("id", "")),
                              arguments={k: decode_value(v) for k, v in c.get("arguments", {}).items()}) for c in value]
        elif key in RECORD_FIELDS:
            if not isinstance(value, list):
                raise field_error(index, f"{key} must be a list")
            value = [decode_value(d) for d in value]
        elif key in VALUE_FIELDS:
            value = decode_value(value)
        elif isinstance(default, bool):
            if not isinstance(value, bool):
                raise field_error(index, f"{key} must be true or false")
        elif isinstance(default, (int, float)):
            value = _number(value, index, key)
        elif isinstance(default, str) or key in OPTIONAL_TEXT:
            if not (isinstance(value, str) or (value is None and key in OPTIONAL_TEXT)):
                raise field_error(index, f"{key} must be a string")
        elif isinstance(default, list):
            if not isinstance(value, list) or not all(isinstance(v, (str, int)) and not isinstance(v, bool)
                                                      for v in value):
                raise field_error(index, f"{key} must be a list of strings or numbers")
        setattr(step, key, value)
    return step
