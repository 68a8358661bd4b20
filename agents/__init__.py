"""AgentDeck's agent framework: code and tool-calling agents, models, memory, events.

Exports are resolved lazily so that `import agents` stays cheap and submodules such as
`agents.errors` can be imported from anywhere without import cycles.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "CodeAgent": "agents.loop.code_agent",
    "ToolCallingAgent": "agents.loop.tool_calling_agent",
    "MultiStepAgent": "agents.loop.base",
    "RunResult": "agents.loop.result",
    "RunState": "agents.loop.result",
    "ReplayModel": "agents.models.replay",
    "Model": "agents.models.base",
    "TokenUsage": "agents.models.base",
    "load_model": "agents.models",
    "Tool": "agents.tooling.base",
    "tool": "agents.tooling.decorator",
    "load_tool": "agents.sharing.hub_loading",
    "AgentMemory": "agents.memory.memory",
    "events": "agents.events",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'agents' has no attribute {name!r}")
    module = importlib.import_module(module_name)
    value = module if name == "events" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
