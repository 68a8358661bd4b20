"""The Tool class: a named capability with typed inputs that agents call from code or JSON tool calls."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

from agents.errors import ToolDefinitionError, ToolError, ToolInputError
from agents.tooling.context import ToolContext

#: Input and output types a tool may declare, with the Python types accepted for each.
TOOL_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "image": (object,),
    "audio": (object,),
    "any": (object,),
    "null": (type(None),),
}

#: Tool types that have no JSON-schema equivalent, and what the schema says instead.
_SCHEMA_TYPE = {"image": "string", "audio": "string", "any": "string"}


class Tool:
    """Subclass and set `name`, `description`, `inputs`, `output_type`, then implement `forward`.

    `inputs` maps each argument name to `{"type": <TOOL_TYPES key>, "description": str}` and optionally
    `"nullable": True` (the argument may be omitted or None) and `"enum": [...]`.
    Set `requires_approval = True` for tools that write or send something, or reach outside the app (the web,
    files outside the workspace, a downloaded model), and say why in `approval_reason`: the approval mode
    "approve_tools" pauses before their calls and the UI lists them with that reason.
    Set `takes_context = True` for tools that need the run they are called in (to ask the person, to start a
    sub-run): `forward` then receives `context=ToolContext(...)` from the tool runner (agents/tooling/context.py).
    """

    # Usually set on the class; a tool made per object (a managed agent) sets them on the instance.
    name: str = ""
    description: str = ""
    inputs: dict[str, dict[str, Any]] = {}
    output_type: ClassVar[str] = "any"
    requires_approval: ClassVar[bool] = False
    takes_context: ClassVar[bool] = False
    approval_reason: ClassVar[str] = ""  # what a call does outside, shown where the approval mode is chosen

    def __init__(self) -> None:
        self.validate_definition()

    def validate_definition(self) -> None:
        """Fail early, with the fix, when a tool is declared wrongly."""
        cls_name = type(self).__name__
        if not self.name or not self.name.isidentifier():
            raise ToolDefinitionError(f"Tool {cls_name} needs a `name` that is a Python identifier, got {self.name!r}.")
        if not self.description:
            raise ToolDefinitionError(f"Tool {self.name!r} needs a `description` telling the model what it does.")
        for arg, spec in self.inputs.items():
            if not isinstance(spec, dict) or "type" not in spec or "description" not in spec:
                raise ToolDefinitionError(
                    f"Tool {self.name!r}: input {arg!r} must be a dict with `type` and `description`."
                )
            types = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
            unknown = [t for t in types if t not in TOOL_TYPES]
            if unknown:
                raise ToolDefinitionError(
                    f"Tool {self.name!r}: input {arg!r} has unknown type {unknown[0]!r}; "
                    f"use one of {sorted(TOOL_TYPES)}."
                )
        if self.output_type not in TOOL_TYPES:
            raise ToolDefinitionError(
                f"Tool {self.name!r}: output_type {self.output_type!r} is unknown; use one of {sorted(TOOL_TYPES)}."
            )

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"Tool {self.name!r} does not implement forward().")

    def bind_arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Map positional and keyword arguments onto the declared inputs, then validate them."""
        names = list(self.inputs)
        if len(args) == 1 and not kwargs and isinstance(args[0], dict) and len(names) != 1:
            kwargs = dict(args[0])  # a JSON action's arguments passed as one dict
            args = ()
        if len(args) > len(names):
            raise ToolInputError(
                f"{self.name}() takes {len(names)} argument(s) ({', '.join(names) or 'none'}) "
                f"but {len(args)} were given."
            )
        bound = dict(zip(names, args, strict=False))  # fewer positional arguments than inputs is fine
        for key, value in kwargs.items():
            if key in bound:
                raise ToolInputError(f"{self.name}() got argument {key!r} twice.")
            bound[key] = value
        return self.validate_arguments(bound)

    def validate_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check names and types against `inputs`; return the arguments with ints widened for numbers."""
        unknown = [k for k in arguments if k not in self.inputs]
        if unknown:
            raise ToolInputError(
                f"{self.name}() got unexpected argument {unknown[0]!r}; "
                f"its inputs are: {', '.join(self.inputs) or 'none'}."
            )
        checked: dict[str, Any] = {}
        for arg, spec in self.inputs.items():
            nullable = spec.get("nullable", False)
            if arg not in arguments:
                if not nullable:
                    raise ToolInputError(f"{self.name}() is missing required argument {arg!r} ({spec['description']}).")
                continue
            value = arguments[arg]
            if value is None and nullable:
                checked[arg] = None
                continue
            types = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
            if not any(_matches(value, t) for t in types):
                raise ToolInputError(
                    f"{self.name}(): argument {arg!r} should be of type {' or '.join(types)}, "
                    f"got {type(value).__name__} {_short(value)}."
                )
            if "enum" in spec and value not in spec["enum"]:
                raise ToolInputError(f"{self.name}(): argument {arg!r} must be one of {spec['enum']}, got {value!r}.")
            checked[arg] = value
        return checked

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the tool directly, outside any run (its arguments checked as in a run)."""
        return self._forward_checked(self.bind_arguments(args, kwargs), None)

    def invoke(self, arguments: dict[str, Any], context: ToolContext | None = None) -> Any:
        """Check `arguments` and run the tool; the tool runner's way in, handing `context` to tools that take it."""
        return self._forward_checked(self.bind_arguments((), arguments), context)

    def _forward_checked(self, arguments: dict[str, Any], context: ToolContext | None) -> Any:
        if not self.takes_context:
            return self.forward(**arguments)
        if context is None:
            raise ToolError(f"{self.name} can only be used inside an agent run.")
        return self.forward(**arguments, context=context)

    def to_openai_schema(self) -> dict[str, Any]:
        """The tool as an OpenAI-style function definition (used for native tool calling)."""
        properties: dict[str, Any] = {}
        required: list[str] = []
        for arg, spec in self.inputs.items():
            types = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
            json_types = [_SCHEMA_TYPE.get(t, t) for t in types]
            prop: dict[str, Any] = {"type": json_types[0] if len(json_types) == 1 else json_types,
                                    "description": spec["description"]}
            if "enum" in spec:
                prop["enum"] = list(spec["enum"])
            if "items" in spec:
                prop["items"] = spec["items"]
            properties[arg] = prop
            if not spec.get("nullable", False):
                required.append(arg)
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {"type": "object", "properties": properties, "required": required},
            },
        }

    def signature_text(self) -> str:
        """A Python-like signature for prompts: `name(a: string, b: integer) -> string`."""
        params = ", ".join(
            f"{arg}: {spec['type'] if isinstance(spec['type'], str) else ' | '.join(spec['type'])}"
            + (" = None" if spec.get("nullable") else "")
            for arg, spec in self.inputs.items()
        )
        return f"{self.name}({params}) -> {self.output_type}"

    def __repr__(self) -> str:
        return f"<Tool {self.signature_text()}>"

    # -- sharing (agents/sharing/) ----------------------------------------------------------------
    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Write the tool to `folder` (`tool.json`, and its source as `tool.py`); `load_tool(folder)` reads it."""
        from agents.sharing.tool_folder import save_tool

        return save_tool(self, folder)

    def push_to_hub(self, repo_id: str, *, commit_message: str = "Upload tool", private: bool | None = None,
                    token: str | None = None, endpoint: str | None = None) -> str:
        """Save the tool to a Hub repo (created if needed); returns the commit's URL."""
        from agents.sharing.hub import HubOptions, push_tool

        return push_tool(self, repo_id, HubOptions(endpoint=endpoint, token=token), commit_message, private)

    @staticmethod
    def from_space(space_id: str, name: str, description: str, *, api_name: str | None = None,
                   token: str | None = None) -> Tool:
        """A Gradio Space (a Hub id, or a Gradio app's full URL) as a tool, its inputs read from the Space's API
        info. Its calls send data to that server, so they pause for approval in the approval modes that cover
        flagged tools."""
        from agents.sharing.space_tool import connect_space

        return SpaceTool(connect_space(space_id, api_name, token), name, description)


class SpaceTool(Tool):
    """A tool whose calls are predictions of a Gradio app's endpoint (made by `Tool.from_space`)."""

    requires_approval = True
    approval_reason = "sends its inputs to a Gradio Space, a server outside the app"

    def __init__(self, endpoint: Any, name: str, description: str) -> None:
        self.endpoint = endpoint
        self.name = name
        self.description = description
        self.inputs = endpoint.inputs
        vars(self)["output_type"] = endpoint.output_type  # per Space, like its name and inputs
        super().__init__()

    def forward(self, **kwargs: Any) -> Any:
        return self.endpoint.call(kwargs)

    def space_reference(self) -> dict[str, Any]:
        """What `save` writes so the tool can reach its Space again."""
        return dict(self.endpoint.reference())


def _matches(value: Any, type_name: str) -> bool:
    if type_name in ("integer", "number") and isinstance(value, bool):
        return False
    if type_name == "number" and isinstance(value, str):
        return False
    return isinstance(value, TOOL_TYPES[type_name])


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
