"""A tool as a self-contained Python file (the way back is tool_loading.py).

Why: a shared tool travels as source (a folder, a Hub repo), so the file must hold everything the tool needs. The
names its code uses from its own module become import lines when they are modules or objects importable from an
installed package, or assignments when they are plain constants; anything else (a helper defined next to the tool,
a closure's variable) is refused with the name to move into the tool.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import sys
import textwrap
import types
from typing import Any

from agents.errors import SharingError

#: Where the framework's own names are imported from in a saved file.
_HEADER = "from agents.tooling.base import Tool\nfrom agents.tooling.decorator import tool\n"
_CONSTANT_TYPES = (int, float, str, bool, bytes, type(None))
#: The source a loaded tool was made from, so it can be saved again (its temporary file may be gone).
SOURCE_ATTRIBUTE = "_agentdeck_source"


def tool_module_source(tool: Any) -> str:
    """The text of a Python file defining `tool` and nothing else it would not need."""
    kept = getattr(tool, SOURCE_ATTRIBUTE, None)
    if isinstance(kept, str):
        return kept
    wrapped = getattr(tool, "__wrapped__", None)
    if wrapped is not None:
        return _function_tool_source(tool, wrapped)
    return _class_tool_source(tool)


def _function_tool_source(tool: Any, function: Any) -> str:
    if getattr(function, "__code__", None) is not None and function.__code__.co_freevars:
        raise SharingError(
            f"Tool {tool.name!r} uses variables of the function it is defined in "
            f"({', '.join(function.__code__.co_freevars)}); define it at the top level of a file to share it.")
    source = _source_of(function, tool.name)
    node = _only_definition(source, ast.FunctionDef, tool.name)
    body = "\n".join(source.splitlines()[node.lineno - 1:])  # the decorators go: ours is written below
    decorator = f"@tool(name={tool.name!r}, requires_approval={bool(tool.requires_approval)!r})"
    imports = _imports_for(source, function.__globals__, function.__module__, tool.name, skip={"Tool", "tool"})
    return _HEADER + imports + "\n\n" + decorator + "\n" + body.rstrip() + "\n"


def _class_tool_source(tool: Any) -> str:
    cls = type(tool)
    try:
        inspect.signature(cls).bind()
    except (TypeError, ValueError) as exc:
        raise SharingError(
            f"Tool {tool.name!r} ({cls.__name__}) cannot be shared: it is made again without arguments, and "
            f"its constructor needs some ({exc}). Give its arguments defaults.") from exc
    source = _source_of(cls, tool.name)
    _only_definition(source, ast.ClassDef, tool.name)
    module = sys.modules.get(cls.__module__)
    namespace = dict(vars(module)) if module is not None else {}
    imports = _imports_for(source, namespace, cls.__module__, tool.name, skip={"Tool", "tool"})
    return _HEADER + imports + "\n\n" + source.rstrip() + "\n"


def _source_of(obj: Any, name: str) -> str:
    try:
        return textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError) as exc:
        raise SharingError(f"The source of tool {name!r} cannot be read ({exc}); define it in a .py file to "
                           "share it (not in a notebook cell typed at a prompt).") from exc


def _only_definition(source: str, kind: type[ast.stmt], name: str) -> Any:
    tree = ast.parse(source)
    if len(tree.body) != 1 or not isinstance(tree.body[0], kind):
        raise SharingError(f"The source of tool {name!r} is not one definition; define it at a file's top level.")
    return tree.body[0]


def _imports_for(source: str, namespace: dict[str, Any], home: str, tool_name: str, skip: set[str]) -> str:
    """Import lines (or constants) for the names the source reads but does not define."""
    lines: list[str] = []
    for name in sorted(free_names(ast.parse(source)) - skip):
        if hasattr(builtins, name):
            continue
        if name not in namespace:
            raise SharingError(f"Tool {tool_name!r} uses {name!r}, which is not defined in its module; "
                               "import or define it inside the tool.")
        lines.append(_import_line(name, namespace[name], home, tool_name))
    lines.sort(key=lambda line: not line.startswith(("import ", "from ")))  # imports first, then constants
    return "\n".join(lines) + ("\n" if lines else "")


def _import_line(name: str, value: Any, home: str, tool_name: str) -> str:
    if isinstance(value, types.ModuleType):
        return f"import {value.__name__}" if value.__name__ == name else f"import {value.__name__} as {name}"
    if isinstance(value, _CONSTANT_TYPES):
        return f"{name} = {value!r}"
    module_name = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    module = sys.modules.get(module_name or "")
    if (module is not None and module_name not in (home, "__main__") and isinstance(qualname, str)
            and getattr(module, qualname, None) is value):
        return f"from {module_name} import {qualname}" + (f" as {name}" if qualname != name else "")
    raise SharingError(f"Tool {tool_name!r} uses {name!r}, defined next to it in {home}: move it inside the tool "
                       "(or into an installed module) so the shared file holds everything the tool needs.")


def free_names(tree: ast.AST) -> set[str]:
    """Names read anywhere in `tree` that nothing in it binds (a generous notion of bound: any binding counts)."""
    read: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return read - bound
