"""Tools agents can call: the Tool base, the @tool decorator, and the built-in tools.

The built-in tools, the MCP loader and the registry are exported lazily, so `import tools` stays
cheap and never imports heavy libraries (transformers, torch, mcp, ddgs).
"""
from __future__ import annotations

import importlib
from typing import Any

from agents.tooling.base import TOOL_TYPES, Tool
from agents.tooling.decorator import tool

_LAZY: dict[str, str] = {
    "WebSearchTool": "tools.web_search",
    "VisitWebpageTool": "tools.visit_webpage",
    "WebBrowserTool": "tools.web_browser",
    "WikipediaSearchTool": "tools.wikipedia_search",
    "SpeechToTextTool": "tools.speech_to_text",
    "FinalAnswerTool": "agents.tooling.final_answer",
    "AskUserTool": "agents.tooling.ask_user",
    "MCPToolset": "tools.mcp_client",
    "MCPServerSpec": "tools.mcp_config",
    "parse_mcp_servers": "tools.mcp_config",
    "load_user_tools": "tools.user_tools",
    "load_tool": "agents.sharing.hub_loading",
    "ToolSettings": "tools.registry",
    "ToolCatalog": "tools.registry",
    "all_tools": "tools.registry",
    "load_tool_catalog": "tools.registry",
}

__all__ = ["TOOL_TYPES", "Tool", "tool", *_LAZY]


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'tools' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
