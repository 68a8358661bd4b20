"""A tool saved as a folder: `tool.json`, and `tool.py` for a tool shared as source (loaded by tool_loading.py).

Why: one layout for a tool on disk, in an agent's folder (`tools/<name>/`) and in a Hub repo. The manifest says how
the tool comes back: `source` (its `tool.py`, which must define exactly that tool with the inputs the manifest
lists), `builtin` (a class of AgentDeck's own packages, made again by name) or `space` (a Gradio Space called
remotely). File names inside the folder are fixed, never read from the manifest, so a folder cannot point outside.
"""
from __future__ import annotations

import inspect
import json
import os
import sys
from pathlib import Path
from typing import Any

from agents.errors import SharingError
from agents.sharing.tool_source import tool_module_source

TOOL_MANIFEST = "tool.json"
TOOL_SOURCE = "tool.py"
TOOL_FORMAT = "agentdeck-tool"
#: The folder layout's version; a folder of a later one is refused rather than half understood.
FORMAT_VERSION = 1
#: Packages whose tool classes are saved by name: they are installed wherever AgentDeck is.
BUILTIN_PACKAGES = ("agents", "tools")


def save_tool(tool: Any, folder: str | os.PathLike[str]) -> Path:
    """Write `tool` to `folder` (created if needed); returns the folder."""
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {
        "format": TOOL_FORMAT, "version": FORMAT_VERSION, "name": tool.name, "description": tool.description,
        "inputs": tool.inputs, "output_type": tool.output_type,
        "requires_approval": bool(tool.requires_approval),
    }
    space = getattr(tool, "space_reference", None)
    builtin = None if callable(space) else _builtin_reference(tool)
    if callable(space):
        manifest.update(kind="space", space=space())
    elif builtin is not None:
        manifest.update(kind="builtin", **{"class": builtin})
    else:
        manifest["kind"] = "source"
        (target / TOOL_SOURCE).write_text(tool_module_source(tool), encoding="utf-8")
    (target / TOOL_MANIFEST).write_text(json.dumps(manifest, indent=2, default=_not_json(tool.name)) + "\n",
                                        encoding="utf-8")
    return target


def _not_json(name: str) -> Any:
    def refuse(value: Any) -> Any:
        raise SharingError(f"Tool {name!r} declares a value that is not JSON in its inputs: {value!r}.")
    return refuse


def _builtin_reference(tool: Any) -> str | None:
    """`module:Class` for a tool class of AgentDeck's own packages that is made without arguments, else None."""
    cls = type(tool)
    if getattr(tool, "__wrapped__", None) is not None or cls.__module__.split(".")[0] not in BUILTIN_PACKAGES:
        return None
    module = sys.modules.get(cls.__module__)
    if module is None or getattr(module, cls.__qualname__, None) is not cls:
        raise SharingError(f"Tool {tool.name!r} is made at run time ({cls.__module__}) and cannot be saved: "
                           "configure it where it is used (an MCP server's tools come from its server).")
    try:
        inspect.signature(cls).bind()
    except (TypeError, ValueError) as exc:
        raise SharingError(f"Tool {tool.name!r} ({cls.__name__}) needs arguments to be made and cannot be saved "
                           "by name.") from exc
    return f"{cls.__module__}:{cls.__qualname__}"


def load_manifest(folder: Path, file_name: str, fmt: str, what: str) -> tuple[dict[str, Any], Path]:
    """A saved folder's manifest (`what`: "tool" or "agent") checked for JSON, format and version, and its path;
    SharingError saying what is wrong."""
    path = folder / file_name
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise SharingError(f"{folder} holds no {file_name}: it is not a saved {what}.") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SharingError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != fmt:
        raise SharingError(f"{path} is not an AgentDeck {what} manifest (its `format` is not {fmt!r}).")
    check_version(manifest, path)
    return manifest, path


def read_manifest(folder: Path) -> dict[str, Any]:
    """The folder's tool manifest, checked for shape; SharingError saying what is wrong."""
    manifest, path = load_manifest(folder, TOOL_MANIFEST, TOOL_FORMAT, "tool")
    name = manifest.get("name")
    if not isinstance(name, str) or not name.isidentifier():
        raise SharingError(f"{path}: the tool's name {name!r} is not a Python identifier.")
    if manifest.get("kind") not in ("source", "builtin", "space"):
        raise SharingError(f"{path}: unknown tool kind {manifest.get('kind')!r} (source, builtin or space).")
    return manifest


def check_version(manifest: dict[str, Any], path: Path) -> None:
    if manifest.get("version") != FORMAT_VERSION:
        raise SharingError(f"{path} is of format version {manifest.get('version')!r}; this AgentDeck reads version "
                           f"{FORMAT_VERSION}. Update AgentDeck to load it.")


def code_to_run(folder: Path) -> list[str]:
    """What loading the tool in `folder` would run, one line each (for the trust message)."""
    manifest = read_manifest(folder)
    if manifest["kind"] == "source":
        return [f"{folder / TOOL_SOURCE} (tool {manifest['name']!r})"]
    if manifest["kind"] == "builtin":
        return [f"AgentDeck's {manifest.get('class')} (tool {manifest['name']!r})"]
    return [f"calls to the Space {manifest.get('space', {}).get('space_id')!r} (tool {manifest['name']!r})"]
