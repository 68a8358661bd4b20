"""Sharing agents and tools: saved as folders, pushed to and loaded from the Hugging Face Hub, Gradio Spaces as
tools. The agents' and tools' own methods (`save`, `push_to_hub`, `from_folder`, `from_hub`, `Tool.from_space`)
call these modules; `load_tool` is the one function to import from here."""
from __future__ import annotations

from agents.sharing.hub_loading import load_tool

__all__ = ["load_tool"]
