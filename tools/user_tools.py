"""Load user-written tools from Python files or folders (AGENTDECK_TOOLS_PATH).

Why: users extend the agent without touching AgentDeck's code — they drop a file of `@tool`
functions (or Tool subclasses or instances) somewhere and list it, or its folder, in
AGENTDECK_TOOLS_PATH (`os.pathsep`-separated). A file that fails to import must not stop the app
or the other files, so errors are collected, each naming the file and line, and returned next to
the tools that did load.
"""
from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import sys
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from agents.tooling.base import Tool

TOOLS_PATH_ENV = "AGENTDECK_TOOLS_PATH"


@dataclass
class UserToolsResult:
    """The tools that loaded (by name), which file each came from, and one message per problem."""

    tools: dict[str, Tool] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def split_tools_path(value: str | Iterable[str | os.PathLike[str]] | None) -> list[Path]:
    """Turn an `os.pathsep`-separated string (or a list) into paths, skipping empty entries."""
    if value is None:
        return []
    items = value.split(os.pathsep) if isinstance(value, str) else list(value)
    return [Path(str(item)).expanduser() for item in items if str(item).strip()]


def tool_files(paths: Iterable[Path]) -> tuple[list[Path], list[str]]:
    """Expand folders to their `*.py` files (not recursive, skipping `_*.py`); report missing paths."""
    files: list[Path] = []
    errors: list[str] = []
    for path in paths:
        if path.is_dir():
            files.extend(p for p in sorted(path.glob("*.py")) if not p.name.startswith("_"))
        elif path.is_file():
            files.append(path)
        else:
            errors.append(f"{path}: no such file or folder (listed in {TOOLS_PATH_ENV}).")
    return files, errors


def load_user_tools(paths: str | Iterable[str | os.PathLike[str]] | None) -> UserToolsResult:
    """Load every tool from the given files and folders; keep going past files that fail."""
    result = UserToolsResult()
    files, result.errors = tool_files(split_tools_path(paths))
    for file in files:
        try:
            found = load_tools_from_file(file)
        except UserToolLoadError as exc:
            result.errors.append(str(exc))
            continue
        for tool in found:
            if tool.name in result.tools:
                result.errors.append(f"{file}: tool {tool.name!r} replaces the one from {result.sources[tool.name]}.")
            result.tools[tool.name] = tool
            result.sources[tool.name] = str(file)
    return result


class UserToolLoadError(Exception):
    """A user tool file could not be imported or its tools could not be built; the message names file and line."""


def load_tools_from_file(path: str | os.PathLike[str]) -> list[Tool]:
    """Import one Python file and return the Tool instances and (instantiated) Tool subclasses it defines."""
    file = Path(path).resolve()
    digest = hashlib.sha1(str(file).encode()).hexdigest()[:10]
    module_name = f"agentdeck_user_tools.{_safe(file.stem)}_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None:
        raise UserToolLoadError(f"{file}: cannot be imported as a Python module.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses, pickling etc. need the module registered while it runs
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        sys.modules.pop(module_name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise UserToolLoadError(_describe_import_error(file, exc)) from exc

    tools: dict[str, Tool] = {}
    for value in vars(module).values():
        if isinstance(value, Tool):
            tools.setdefault(value.name, value)
    for attr, value in vars(module).items():
        if (inspect.isclass(value) and issubclass(value, Tool) and value.__module__ == module_name
                and value.name and not inspect.isabstract(value) and value.name not in tools):
            try:
                tools[value.name] = value()
            except Exception as exc:
                line = inspect.getsourcelines(value)[1] if _has_source(value) else "?"
                raise UserToolLoadError(
                    f"{file}, line {line}: cannot create tool class {attr} without arguments "
                    f"({type(exc).__name__}: {exc}). Create an instance in the file instead.") from exc
    return list(tools.values())


def _describe_import_error(file: Path, exc: BaseException) -> str:
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).resolve() == file:
        return f"{file}, line {exc.lineno}: {type(exc).__name__}: {exc.msg}"
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename and Path(frame.filename).resolve() == file:
            line = frame.lineno
    where = f"{file}, line {line}" if line else str(file)
    return f"{where}: {type(exc).__name__}: {exc}".rstrip(": ")


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text) or "tools"


def _has_source(obj: type) -> bool:
    try:
        inspect.getsourcelines(obj)
        return True
    except (OSError, TypeError):
        return False
