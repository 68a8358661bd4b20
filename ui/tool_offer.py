"""The built-in tools a visitor may enable: loaded once per process, listed for the settings form and the
settings' check (ui/settings.py), picked by name for a new agent (ui/agent_factory.py).
"""
from __future__ import annotations

import logging
import threading
from typing import Any

DEFAULT_TOOLS = ("web_search", "visit_webpage", "wikipedia_search")

_TOOL_CACHE: list[Any] | None = None
_TOOL_LOCK = threading.Lock()


def _registry_tools() -> list[Any]:
    """The registry's tools, built once per process (MCP servers are started once, not per session)."""
    global _TOOL_CACHE
    with _TOOL_LOCK:
        if _TOOL_CACHE is None:
            try:
                from tools.registry import all_tools
                from ui.config.apply import tool_settings
                from ui.config.current import current_settings

                found = all_tools(tool_settings(current_settings()))  # the checked settings, not from_env()
                _TOOL_CACHE = list(found.values()) if isinstance(found, dict) else list(found)
            except Exception as exc:  # the app still works without extra tools
                logging.getLogger(__name__).warning("Could not load the tool registry: %s", exc)
                _TOOL_CACHE = []
        return list(_TOOL_CACHE)


def default_tool_names() -> list[str]:
    names = [name for name, _ in available_tools()]
    return [name for name in DEFAULT_TOOLS if name in names]


def available_tools() -> list[tuple[str, str]]:
    """(name, description) of the tools a person may enable, final_answer excluded (always there)."""
    found = []
    for tool in _registry_tools():
        name = getattr(tool, "name", "")
        if name and name != "final_answer":
            found.append((name, " ".join(str(getattr(tool, "description", "")).split())))
    return found


def unavailable_tools() -> dict[str, str]:
    """Built-in tools this server cannot offer, with why (tools/registry.py): the settings form says so."""
    try:
        from tools.registry import unavailable_builtin_tools

        return unavailable_builtin_tools()
    except Exception as exc:  # the form still works without the note
        logging.getLogger(__name__).warning("Could not check the built-in tools: %s", exc)
        return {}


def tools_note(offered: list[tuple[str, str]]) -> str | None:
    """The line under the form's tool list: none offered, and the built-ins this server lacks and why."""
    parts = [] if offered else ["No extra tools are available."]
    parts += [f"Not on this server: {name} {why}" for name, why in unavailable_tools().items()]
    return " ".join(parts) or None


def select_tools(names: tuple[str, ...]) -> list[Any]:
    wanted = set(names)
    return [tool for tool in _registry_tools() if getattr(tool, "name", "") in wanted]
