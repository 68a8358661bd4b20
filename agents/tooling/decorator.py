"""The @tool decorator: builds a Tool from a function's type hints and Google-style docstring.

It reads `__doc__` and `__annotations__` only, never the source, so it works for functions defined
in `python -c` or a REPL.
"""
from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agents.errors import ToolDefinitionError
from agents.tooling.base import Tool

_PY_TO_TOOL_TYPE: dict[Any, str] = {
    str: "string", int: "integer", float: "number", bool: "boolean",
    list: "array", tuple: "array", dict: "object", type(None): "null", Any: "any",
}

_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Examples?|Notes?)\s*:\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")


@dataclass
class ParsedDocstring:
    description: str
    args: dict[str, str] = field(default_factory=dict)
    returns: str = ""


def parse_google_docstring(doc: str | None) -> ParsedDocstring:
    """Split a Google-style docstring into its summary, `Args:` entries and `Returns:` text."""
    lines = inspect.cleandoc(doc or "").splitlines()
    description: list[str] = []
    args: dict[str, str] = {}
    returns: list[str] = []
    section = "description"
    current_arg: str | None = None
    arg_indent = None
    for line in lines:
        header = _SECTION.match(line)
        if header:
            section = header.group(1).lower()
            current_arg = None
            arg_indent = None
            continue
        if section == "description":
            description.append(line)
        elif section in ("args", "arguments", "parameters"):
            indent = len(line) - len(line.lstrip())
            match = _ARG_LINE.match(line)
            if match and (arg_indent is None or indent <= arg_indent):
                arg_indent = indent
                current_arg = match.group(1).lstrip("*")
                args[current_arg] = match.group(3).strip()
            elif current_arg and line.strip():
                args[current_arg] = (args[current_arg] + " " + line.strip()).strip()
        elif section in ("returns", "return") and line.strip():
            returns.append(line.strip())
    return ParsedDocstring(
        description="\n".join(description).strip(), args=args, returns=" ".join(returns)
    )


def python_type_to_tool_type(annotation: Any) -> tuple[list[str], bool]:
    """Map a type hint to tool type names, and whether None is allowed."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        names: list[str] = []
        nullable = False
        for member in typing.get_args(annotation):
            if member is type(None):
                nullable = True
                continue
            member_names, _ = python_type_to_tool_type(member)
            names.extend(n for n in member_names if n not in names)
        return names or ["any"], nullable
    if origin is typing.Literal:
        values = typing.get_args(annotation)
        return [_PY_TO_TOOL_TYPE.get(type(values[0]), "any")], False
    if origin is not None:
        annotation = origin
    if annotation in _PY_TO_TOOL_TYPE:
        return [_PY_TO_TOOL_TYPE[annotation]], False
    type_name = getattr(annotation, "__name__", str(annotation))
    if type_name in ("Image", "PIL.Image.Image"):
        return ["image"], False
    return ["any"], False


def tool(function: Callable[..., Any] | None = None, *, name: str | None = None,
         requires_approval: bool = False) -> Any:
    """Turn a typed, documented function into a Tool instance.

    Every parameter needs a type hint and an entry under `Args:` in the docstring; the summary
    becomes the tool's description. Use as `@tool` or `@tool(name=..., requires_approval=True)`.
    """
    if function is None:
        return lambda fn: tool(fn, name=name, requires_approval=requires_approval)
    return _build_tool(function, name=name, requires_approval=requires_approval)


def _build_tool(function: Callable[..., Any], name: str | None, requires_approval: bool) -> Tool:
    tool_name = name or function.__name__
    doc = parse_google_docstring(function.__doc__)
    if not doc.description:
        raise ToolDefinitionError(
            f"@tool {tool_name}: add a docstring whose first lines say what the tool does."
        )
    try:
        hints = typing.get_type_hints(function)
    except Exception as exc:  # unresolved forward references
        raise ToolDefinitionError(f"@tool {tool_name}: cannot read its type hints ({exc}).") from exc
    signature = inspect.signature(function)
    inputs: dict[str, dict[str, Any]] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(f"@tool {tool_name}: *args and **kwargs are not supported; name each input.")
        if param.name not in hints:
            raise ToolDefinitionError(f"@tool {tool_name}: parameter {param.name!r} needs a type hint.")
        if param.name not in doc.args:
            raise ToolDefinitionError(
                f"@tool {tool_name}: describe parameter {param.name!r} under `Args:` in the docstring."
            )
        type_names, nullable = python_type_to_tool_type(hints[param.name])
        spec: dict[str, Any] = {"type": type_names[0] if len(type_names) == 1 else type_names,
                                "description": doc.args[param.name]}
        if nullable or param.default is not inspect.Parameter.empty:
            spec["nullable"] = True
        if typing.get_origin(hints[param.name]) is typing.Literal:
            spec["enum"] = list(typing.get_args(hints[param.name]))
        inputs[param.name] = spec
    output_names, _ = python_type_to_tool_type(hints.get("return", Any))
    description = doc.description + (f"\nReturns: {doc.returns}" if doc.returns else "")
    defaults = {p.name: p.default for p in signature.parameters.values() if p.default is not inspect.Parameter.empty}

    def forward(self: Tool, **kwargs: Any) -> Any:
        call_args = {**defaults, **{k: v for k, v in kwargs.items() if not (v is None and k in defaults)}}
        return function(**call_args)

    tool_class = type(
        f"{tool_name}_Tool",
        (Tool,),
        {
            "name": tool_name,
            "description": description,
            "inputs": inputs,
            "output_type": output_names[0],
            "requires_approval": requires_approval,
            "forward": forward,
            "__doc__": function.__doc__,
            "__module__": getattr(function, "__module__", __name__),
        },
    )
    instance: Tool = tool_class()
    instance.__wrapped__ = function  # type: ignore[attr-defined]  # like functools.wraps, on the instance
    return instance
