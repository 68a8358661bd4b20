"""Tools agents can call: the Tool base, the @tool decorator, and the built-in tools."""
from tools.base import TOOL_TYPES, Tool
from tools.decorator import tool

__all__ = ["TOOL_TYPES", "Tool", "tool"]
