"""Mapping MCP tools' JSON schemas onto AgentDeck tool inputs (required properties are not nullable)."""
from __future__ import annotations

import json
import keyword
import re
from collections.abc import Set
from typing import Any

_JSON_TO_TOOL_TYPE = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean",
                      "array": "array", "object": "object", "null": "null"}


def schema_to_inputs(schema: dict[str, Any] | None) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Map a tool's JSON input schema to Tool `inputs`; also return {python name: schema property name}."""
    schema = schema or {}
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    inputs: dict[str, dict[str, Any]] = {}
    names: dict[str, str] = {}
    for prop_name, prop in properties.items():
        prop = prop if isinstance(prop, dict) else {}
        types, allows_null = _json_schema_types(prop)
        description = prop.get("description") or prop.get("title") or prop_name
        if "default" in prop and prop["default"] is not None:
            description += f" (default: {json.dumps(prop['default'])})"
        spec: dict[str, Any] = {"type": types[0] if len(types) == 1 else types, "description": description}
        if prop_name not in required or allows_null:
            spec["nullable"] = True
        if isinstance(prop.get("enum"), list):
            spec["enum"] = [v for v in prop["enum"] if v is not None]
        if isinstance(prop.get("items"), dict):
            spec["items"] = prop["items"]
        python_name = identifier(prop_name, taken=set(inputs))
        inputs[python_name] = spec
        names[python_name] = prop_name
    return inputs, names


def _json_schema_types(prop: dict[str, Any]) -> tuple[list[str], bool]:
    """The tool types a JSON-schema property allows (["any"] when unknown), and whether it allows null."""
    raw = _raw_json_types(prop)
    types: list[str] = []
    for item in raw:
        mapped = _JSON_TO_TOOL_TYPE.get(item, "any") if isinstance(item, str) else "any"
        if mapped != "null" and mapped not in types:
            types.append(mapped)
    if not types or "any" in types:
        types = ["any"]
    return types, "null" in raw


def _raw_json_types(prop: dict[str, Any]) -> list[Any]:
    """JSON type names of a property, following anyOf/oneOf; "any" for a member with no type."""
    raw: list[Any] = []
    if "type" in prop:
        raw.extend(prop["type"] if isinstance(prop["type"], list) else [prop["type"]])
    for key in ("anyOf", "oneOf"):
        for member in prop.get(key) or []:
            if isinstance(member, dict):
                raw.extend(_raw_json_types(member) or ["any"])
    if not raw and isinstance(prop.get("enum"), list):
        raw = sorted({_python_json_type(v) for v in prop["enum"]})
    return raw


def _python_json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "null" if value is None else "string"


def identifier(text: str, taken: Set[str] = frozenset()) -> str:
    name = re.sub(r"\W", "_", text) or "arg"
    if name[0].isdigit():
        name = "_" + name
    if keyword.iskeyword(name):
        name += "_"
    base, n = name, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name
