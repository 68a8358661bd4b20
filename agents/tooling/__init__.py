"""What the framework itself needs of tools: the `Tool` base, the `@tool` decorator, `final_answer` and
`ask_user`. The built-in tools that reach outside (web, speech, MCP) live in the top-level `tools` package,
which depends on this one and never the other way round."""
from __future__ import annotations

from agents.tooling.base import TOOL_TYPES, Tool
from agents.tooling.decorator import tool

__all__ = ["TOOL_TYPES", "Tool", "tool"]
