"""A saved tool made again: its source run as a module of its own, which must define exactly the one tool its
manifest names with the inputs it lists; a built-in tool by its class; a Space tool by reconnecting.

Why: a shared file is checked before it is believed, and every failure names the file and what to fix.
Running a file runs its code: the Hub's loaders ask for `trust_remote_code=True` before they get here.
"""
from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import linecache
import os
import sys
import types
from pathlib import Path
from typing import Any

from agents.errors import SharingError
from agents.sharing.tool_folder import BUILTIN_PACKAGES, TOOL_MANIFEST, TOOL_SOURCE, read_manifest
from agents.sharing.tool_source import SOURCE_ATTRIBUTE
from agents.tooling.base import Tool

HUB_APPROVAL_REASON = "comes from the Hugging Face Hub; its code runs in the app, not in the sandbox"


def tool_from_source(source: str, expected_name: str, origin: str) -> Tool:
    """The one tool a shared file defines, named `expected_name`; SharingError naming `origin` otherwise."""
    try:
        tree = ast.parse(source, filename=origin)
    except SyntaxError as exc:
        raise SharingError(f"{origin}, line {exc.lineno}: the tool's source has a syntax error: {exc.msg}.") from exc
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    module_name = f"agentdeck_shared_tools.{expected_name}_{digest}"
    module = types.ModuleType(module_name)
    module.__file__ = origin
    linecache.cache[origin] = (len(source), None, source.splitlines(True), origin)  # tracebacks show its lines
    sys.modules[module_name] = module  # dataclasses and pickling look their module up while it runs
    try:
        exec(compile(tree, origin, "exec"), module.__dict__)  # the caller trusted this code
    except Exception as exc:
        sys.modules.pop(module_name, None)
        line = next((f.lineno for f in reversed(inspect.getinnerframes(exc.__traceback__))
                     if f.filename == origin), None) if exc.__traceback__ else None
        where = f"{origin}, line {line}" if line else origin
        raise SharingError(f"{where}: the tool's file failed to run: {type(exc).__name__}: {exc}") from exc
    found = _tools_defined(module, module_name, origin)
    if len(found) != 1:
        names = ", ".join(sorted(t.name for t in found)) or "none"
        raise SharingError(f"{origin} must define exactly one tool, {expected_name!r}; it defines {len(found)} "
                           f"({names}).")
    tool = found[0]
    if tool.name != expected_name:
        raise SharingError(f"{origin} defines the tool {tool.name!r}, but its manifest names {expected_name!r}.")
    vars(tool)[SOURCE_ATTRIBUTE] = source
    return tool


def _tools_defined(module: types.ModuleType, module_name: str, origin: str) -> list[Tool]:
    instances = [value for value in vars(module).values() if isinstance(value, Tool)]
    made_by = {type(value) for value in instances}
    for value in list(vars(module).values()):
        if (inspect.isclass(value) and issubclass(value, Tool) and value.__module__ == module_name
                and value not in made_by and value.name):
            try:
                instances.append(value())
            except Exception as exc:
                raise SharingError(f"{origin}: the tool class {value.__name__} cannot be made without arguments "
                                   f"({type(exc).__name__}: {exc}).") from exc
    return instances


def _space_tool(manifest: dict[str, Any]) -> Tool:
    reference = manifest.get("space")
    if not isinstance(reference, dict) or not isinstance(reference.get("space_id"), str):
        raise SharingError(f"The saved Space tool {manifest.get('name')!r} names no Space.")
    api_name = reference.get("api_name")
    return Tool.from_space(reference["space_id"], manifest["name"], str(manifest.get("description") or ""),
                           api_name=api_name if isinstance(api_name, str) else None)


def load_tool_folder(folder: str | os.PathLike[str], requires_approval: bool | None = None) -> Tool:
    """The tool saved in `folder`. `requires_approval` overrides what the tool declares (None keeps it)."""
    path = Path(folder)
    manifest = read_manifest(path)
    kind = manifest["kind"]
    if kind == "source":
        source_path = path / TOOL_SOURCE
        try:
            source = source_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SharingError(f"{source_path} cannot be read ({exc}); the tool's folder is incomplete.") from exc
        tool = tool_from_source(source, manifest["name"], str(source_path))
        if manifest.get("inputs") is not None and tool.inputs != manifest["inputs"]:
            raise SharingError(f"{source_path} defines inputs {sorted(tool.inputs)} for {tool.name!r}, but its "
                               f"manifest lists {sorted(manifest['inputs'])}: the folder was changed by hand.")
    elif kind == "builtin":
        tool = _builtin_tool(manifest, path)
    else:
        tool = _space_tool(manifest)
    if requires_approval is not None:
        mark_approval(tool, requires_approval)
    return tool


def _builtin_tool(manifest: dict[str, Any], folder: Path) -> Tool:
    reference = manifest.get("class")
    module_name, _, class_name = str(reference).partition(":")
    if module_name.split(".")[0] not in BUILTIN_PACKAGES or not class_name:
        raise SharingError(f"{folder / TOOL_MANIFEST}: {reference!r} is not a tool of AgentDeck's own packages "
                           f"({', '.join(BUILTIN_PACKAGES)}).")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise SharingError(f"The built-in tool {reference!r} is not in this AgentDeck ({exc}).") from exc
    if not (inspect.isclass(cls) and issubclass(cls, Tool)):
        raise SharingError(f"{reference!r} is not a Tool class.")
    tool = cls()
    if tool.name != manifest["name"]:
        raise SharingError(f"The built-in tool {reference!r} is named {tool.name!r}, not {manifest['name']!r}.")
    return tool


def mark_approval(tool: Tool, required: bool, reason: str = HUB_APPROVAL_REASON) -> None:
    """Set whether calls to this one tool pause for approval (the class's own setting stays as it is)."""
    vars(tool).update(requires_approval=required)
    if required and not tool.approval_reason:
        vars(tool).update(approval_reason=reason)
