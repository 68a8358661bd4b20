"""The agent factory: a fresh agent for one session from its run settings (ui/settings.py), with the model
(shared between sessions where that is safe) and the tools it chose (ui/tool_offer.py).
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ui.session.heap import freeze_long_lived_objects
from ui.settings import AppConfig, RunSettings
from ui.tool_offer import select_tools

_shared_models: dict[str, Any] = {}
_shared_models_lock = threading.Lock()


def load_model(model_string: str) -> Any:
    """The model for `model_string`. Replay models keep a cursor, so each session gets its own; every other
    adapter is stateless between calls and thread-safe, so sessions share one instance (the embedded model's
    weights are loaded once per process, not once per browser tab)."""
    from agents.models import load_model as load

    if model_string.startswith("replay:"):
        return load(model_string)
    with _shared_models_lock:
        model = _shared_models.get(model_string)
        if model is None:
            model = _shared_models[model_string] = load(model_string)
            # Its weights and libraries live as long as the process: keep them out of every full collection.
            freeze_long_lived_objects()
        return model


def build_agent(settings: RunSettings, workdir: str | Path, config: AppConfig) -> Any:
    """A fresh agent (with its own model instance and sandbox) for one session."""
    from agents import CodeAgent, ToolCallingAgent
    from agents.executor.backend import SandboxLimits

    if settings.hf_token and settings.model.startswith("hf:"):
        from agents.models import load_model as load

        model = load(settings.model, token=settings.hf_token)  # the visitor's own: never shared between sessions
    else:
        model = load_model(settings.model)
    tools = [t.for_workspace(workdir) if hasattr(t, "for_workspace") else t for t in select_tools(settings.tools)]
    if not any(getattr(t, "name", "") == "ask_user" for t in tools):  # always there: the model may ask the person
        from agents.tooling.ask_user import AskUserTool
        tools.append(AskUserTool())
    common: dict[str, Any] = dict(tools=tools, model=model, max_steps=settings.max_steps,
                                  planning_interval=settings.planning_interval, verbosity=0,
                                  max_tokens_per_run=config.max_tokens_per_run)
    if settings.agent_type == "tool-calling":
        return _construct(ToolCallingAgent, common, workdir=str(workdir))
    return _construct(CodeAgent, common, workdir=str(workdir), authorized_imports=list(settings.authorized_imports),
                      executor_timeout_s=config.exec_timeout_s, sandbox=config.sandbox,
                      sandbox_pool=config.sandbox_pool > 0,
                      sandbox_limits=SandboxLimits(min_free_mb=config.min_free_mb),
                      use_structured_outputs_internally=config.structured_code,
                      answer_checks=config.answer_checks)


def warm_up_sandboxes(config: AppConfig) -> None:
    """Start the warm pool for the code agent `build_agent` makes with the operator's default imports."""
    from agents import CodeAgent
    from agents.executor.backend import SandboxLimits

    CodeAgent.warm_up(config.authorized_imports, config.exec_timeout_s, config.sandbox,
                      SandboxLimits(min_free_mb=config.min_free_mb))


def _construct(cls: Any, common: dict[str, Any], **extra: Any) -> Any:
    """Pass the optional keyword arguments the agent class accepts, and drop the ones it does not."""
    import inspect

    kwargs = {**common, **extra}
    try:
        parameters = inspect.signature(cls.__init__).parameters
        if not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
            kwargs = {k: v for k, v in kwargs.items() if k in parameters}
    except (TypeError, ValueError):
        pass
    while True:
        try:
            return cls(**kwargs)
        except TypeError as exc:
            optional = [k for k in ("verbosity", "executor_timeout_s", "workdir") if k in kwargs and k in str(exc)]
            if not optional:
                raise
            kwargs.pop(optional[0])
