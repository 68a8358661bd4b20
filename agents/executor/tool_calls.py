"""Tools, as the app serves them to the worker: checked names, and calls answered in the app's process.

Why: tools run in the app, so a call the worker sends is a request from hostile code. Only a name the app
registered is called, with a list and a dict as its arguments; whatever happens, the worker gets a reply it
can decode (a value that is not JSON goes back as its text).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping
from typing import Any

from .ast_guard import FINAL_ANSWER
from .errors import InvalidToolError
from .protocol import frame


def check_tool_names(tools: Mapping[str, Callable[..., Any]]) -> None:
    """Refuse names the code could not call as plain names, or that would hide a builtin or `final_answer`."""
    for name, fn in tools.items():
        if not (isinstance(name, str) and name.isidentifier()) or name.startswith("_"):
            raise InvalidToolError(f"invalid tool name {name!r}")
        if name == FINAL_ANSWER or hasattr(builtins, name):
            raise InvalidToolError(f"tool name {name!r} clashes with a builtin")
        if not callable(fn):
            raise InvalidToolError(f"tool {name!r} is not callable")


def serve_tool_call(msg: dict[str, Any], registered: Mapping[str, Callable[..., Any]],
                    tools: Mapping[str, Callable[..., Any]] | None = None) -> dict[str, Any]:
    """The reply to the worker's tool call `msg`; `tools` (a run's own callables) replace the registered ones."""
    name, call_id = msg.get("name"), msg.get("call_id")
    fn = None
    if isinstance(name, str) and name in registered:
        fn = registered[name] if tools is None else tools.get(name)
    args, kwargs = msg.get("args") or [], msg.get("kwargs") or {}
    if fn is None or not isinstance(args, list) or not isinstance(kwargs, dict):
        return {"op": "tool_result", "call_id": call_id, "ok": False, "error": f"unknown tool {name!r}"}
    try:
        value = fn(*args, **kwargs)
    except Exception as exc:
        return {"op": "tool_result", "call_id": call_id, "ok": False, "error": f"{type(exc).__name__}: {exc}"}
    reply = {"op": "tool_result", "call_id": call_id, "ok": True, "value": value}
    try:
        frame(reply)
    except (TypeError, ValueError):
        reply["value"] = str(value)
    return reply
