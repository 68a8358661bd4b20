"""Structured output for a local transformers model: a reply that is always a JSON object of string fields (the
structured CodeAgent's `{"thought", "code"}`), by guided decoding.

How: the object's fixed parts are written, not generated (`{"thought": "`, then `", "code": "`, then `"}`), and
the model generates only each string's body, stopped at the first unescaped quote; each body is then made a valid
JSON string body (a raw newline escaped, a dangling backslash dropped). So the reply parses whatever the model
writes, and the model's own tokens fill the fields. Each field is one `generate` call from the prompt and the
object so far (no cache is kept between fields: two short calls per step).
"""
from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable
from typing import Any

from agents.errors import ModelError
from agents.models.transformers_loading import LoadedModel


def string_fields(response_format: Any) -> list[str]:
    """The field names of a JSON-schema response format whose properties are all strings (in schema order)."""
    schema: Any = None
    if isinstance(response_format, dict):
        inner = response_format.get("json_schema")
        schema = inner.get("schema") if isinstance(inner, dict) else response_format.get("schema")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not properties or not all(
            isinstance(p, dict) and p.get("type") == "string" for p in properties.values()):
        raise ModelError("Local models write structured output for JSON objects of string fields only "
                         '(e.g. {"thought": string, "code": string}); this response format is something else.')
    return [str(name) for name in properties]


def string_end(text: str) -> int | None:
    """The index of the first quote not escaped by a backslash: where a JSON string's body ends."""
    escaped = False
    for index, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            return index
    return None


def valid_body(raw: str) -> str:
    """`raw` as a valid JSON string body: its escapes kept where they are valid, control characters escaped."""
    for candidate in (raw, raw.rstrip("\\")):
        try:
            value = json.loads(f'"{candidate}"', strict=False)
        except ValueError:
            continue
        return json.dumps(value, ensure_ascii=False)[1:-1]
    return json.dumps(raw, ensure_ascii=False)[1:-1]  # invalid escapes: the text taken literally


class _StringClosed:
    """A stopping criterion: the generated text holds an unescaped quote (the string is closed), or Stop."""

    def __init__(self, tokenizer: Any, start: int, cancel: threading.Event | None) -> None:
        self.tokenizer, self.start, self.cancel = tokenizer, start, cancel

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        stop = self.cancel is not None and self.cancel.is_set()
        done = [stop or string_end(self.tokenizer.decode(row[self.start:], skip_special_tokens=True)) is not None
                for row in input_ids]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


def generate_structured(loaded: LoadedModel, params: dict[str, Any], fields: list[str],
                        on_text: Callable[[str], None], cancel: threading.Event | None = None) -> tuple[str, int]:
    """Write the object field by field (see the module docstring); `on_text` gets each piece as it is settled.
    Returns the object's text and the number of tokens generated."""
    import torch
    from transformers import StoppingCriteriaList

    model, tokenizer = loaded.model, loaded.tokenizer
    prompt = params["input_ids"]
    config = params["generation_config"]
    remaining = int(config.max_new_tokens)
    text, used = "{", 0
    on_text("{")
    for index, name in enumerate(fields):
        literal = ("" if index == 0 else ", ") + json.dumps(name) + ': "'
        text += literal
        on_text(literal)
        body = ""
        if remaining > 0 and not (cancel is not None and cancel.is_set()):
            with loaded.tokenizer_lock:
                written = tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
            ids = torch.cat([prompt, written.to(prompt.device)], dim=-1)
            stage = copy.deepcopy(config)
            last = index == len(fields) - 1
            stage.max_new_tokens = remaining if last else max(1, remaining // (len(fields) - index))
            start = int(ids.shape[-1])
            with torch.inference_mode():
                out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=stage,
                                     stopping_criteria=StoppingCriteriaList([_StringClosed(tokenizer, start, cancel)]))
            new = out[0][start:]
            used += int(new.shape[-1])
            remaining -= int(new.shape[-1])
            raw = tokenizer.decode(new, skip_special_tokens=True)
            end = string_end(raw)
            body = valid_body(raw if end is None else raw[:end])
        text += body + '"'
        on_text(body + '"')
    text += "}"
    on_text("}")
    return text, used
