"""A Gradio Space (or any Gradio app's URL) as a tool's endpoint: its API info gives the typed inputs, a call is
a remote prediction through `gradio_client` (the tool itself is `agents.tooling.base.SpaceTool`).

Why: many capabilities teams want are already Spaces. The tool's inputs are read from the endpoint's parameters
(JSON-schema types, defaults make an input optional), so the agent's calls are checked before they leave. Its
calls send data to another server, so they pause for approval unless the operator says otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents.errors import SharingError, ToolError

#: JSON-schema types of an endpoint's parameters, as tool input types.
_SCHEMA_TYPES = {"string": "string", "number": "number", "integer": "integer", "boolean": "boolean",
                 "array": "array", "object": "object"}


@dataclass
class SpaceEndpoint:
    """One endpoint of a Gradio app, connected: the tool inputs it takes and how to call it."""

    space_id: str
    api_name: str
    inputs: dict[str, dict[str, Any]]
    parameter_names: dict[str, str]
    client: Any = field(repr=False)
    output_type: str = "any"

    def call(self, arguments: dict[str, Any]) -> Any:
        named = {self.parameter_names[key]: value for key, value in arguments.items() if value is not None}
        try:
            return self.client.predict(api_name=self.api_name, **named)
        except Exception as exc:
            raise ToolError(f"The Space {self.space_id!r} failed: {type(exc).__name__}: {exc}") from exc

    def reference(self) -> dict[str, Any]:
        """What a saved tool needs to reach the Space again (no token: that is the loader's)."""
        return {"space_id": self.space_id, "api_name": self.api_name}


def connect_space(space_id: str, api_name: str | None = None, token: str | None = None) -> SpaceEndpoint:
    """Connect to the Space (a Hub id or a full URL) and read the endpoint's typed parameters."""
    from gradio_client import Client

    try:
        client = Client(space_id, token=token, verbose=False, analytics_enabled=False)
        info = client.view_api(print_info=False, return_format="dict")
    except Exception as exc:
        raise SharingError(f"Cannot reach the Space {space_id!r}: {type(exc).__name__}: {exc}") from exc
    chosen, endpoint = _pick_endpoint(info, api_name, space_id)
    inputs, names = _inputs_of(endpoint, space_id)
    return SpaceEndpoint(space_id, chosen, inputs, names, client, _output_type(endpoint))


def _pick_endpoint(info: Any, api_name: str | None, space_id: str) -> tuple[str, dict[str, Any]]:
    named = info.get("named_endpoints", {}) if isinstance(info, dict) else {}
    if not named:
        raise SharingError(f"The Space {space_id!r} has no named API endpoint to call.")
    if api_name is None:
        if len(named) > 1:
            raise SharingError(f"The Space {space_id!r} has several endpoints ({', '.join(sorted(named))}); "
                               "choose one with api_name=.")
        api_name = next(iter(named))
    if api_name not in named:
        raise SharingError(f"The Space {space_id!r} has no endpoint {api_name!r}; it has {', '.join(sorted(named))}.")
    return api_name, named[api_name]


def _inputs_of(endpoint: dict[str, Any], space_id: str) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The tool's inputs and, per input, the endpoint's parameter name (renamed when not an identifier)."""
    inputs: dict[str, dict[str, Any]] = {}
    names: dict[str, str] = {}
    for index, parameter in enumerate(endpoint.get("parameters", [])):
        original = str(parameter.get("parameter_name") or parameter.get("label") or f"input_{index}")
        key = original if original.isidentifier() else f"input_{index}"
        schema = parameter.get("type") if isinstance(parameter.get("type"), dict) else {}
        python_type = parameter.get("python_type") if isinstance(parameter.get("python_type"), dict) else {}
        default = f"(default {parameter.get('parameter_default')!r})" if parameter.get("parameter_has_default") else ""
        description = " ".join(filter(None, [str(parameter.get("label") or original),
                                             str(python_type.get("description") or ""), default])).strip()
        spec: dict[str, Any] = {"type": _SCHEMA_TYPES.get(str(schema.get("type")), "any"),
                                "description": description or f"input {original} of {space_id}"}
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            spec["enum"] = list(schema["enum"])
        if parameter.get("parameter_has_default"):
            spec["nullable"] = True
        inputs[key] = spec
        names[key] = original
    return inputs, names


def _output_type(endpoint: dict[str, Any]) -> str:
    """The tool's output type: the one return value's JSON-schema type, else `any` (files, several values)."""
    returns = endpoint.get("returns", [])
    if len(returns) != 1 or not isinstance(returns[0].get("type"), dict):
        return "any"
    return _SCHEMA_TYPES.get(str(returns[0]["type"].get("type")), "any")
