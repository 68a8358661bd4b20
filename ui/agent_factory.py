"""The agent factory: a fresh agent for one session from its run settings (ui/settings.py), with the model
(shared between sessions where that is safe) and the tools it chose (ui/tool_offer.py).
"""
from __future__ import annotations

import threading
import weakref
from pathlib import Path
from typing import Any

from ui.session.heap import freeze_long_lived_objects
from ui.settings import AppConfig, RunSettings
from ui.tool_offer import available_tools, select_tools

_shared_models: dict[str, Any] = {}
_shared_models_lock = threading.Lock()


def model_options(model_string: str, config: AppConfig | None) -> dict[str, Any]:
    """What the operator's settings pass to `agents.models.load_model`: the transcript to record to, and for a
    hosted model the retry policy (the library reads no AGENTDECK_* variable: ui/config/)."""
    if config is None:
        return {}
    options: dict[str, Any] = {"record_to": config.record_to} if config.record_to else {}
    if not model_string.startswith(("replay:", "embedded", "transformers:")):
        from agents.models import RetryPolicy

        options["retry"] = RetryPolicy(max_retries=config.retry.max_retries, initial_delay=config.retry.initial_delay,
                                       max_retry_after=config.retry.max_retry_after)
    return options


def load_model(model_string: str, config: AppConfig | None = None) -> Any:
    """The model for `model_string`. Replay models keep a cursor, so each session gets its own; every other
    adapter is stateless between calls and thread-safe, so sessions share one instance (the embedded model's
    weights are loaded once per process, not once per browser tab)."""
    from agents.models import load_model as load

    if model_string.startswith("replay:"):
        return load(model_string, **model_options(model_string, config))
    with _shared_models_lock:
        model = _shared_models.get(model_string)
        if model is None:
            model = _shared_models[model_string] = load(model_string, **model_options(model_string, config))
            # Its weights and libraries live as long as the process: keep them out of every full collection.
            freeze_long_lived_objects()
        return model


#: The app's runs end at a person's decision (agents/decisions/pending.py) instead of holding a thread while the
#: person thinks: the request is saved with the chat, and the answer resumes the run on any replica, after a
#: restart too (ui/session/pending_decisions.py).
PAUSE_ON_DECISION = True


def build_agent(settings: RunSettings, workdir: str | Path, config: AppConfig) -> Any:
    """A fresh agent (with its own model instance and sandbox) for one session, built from what `settings` need
    at construction (`RunSettings.agent_build`: the model, the agent type, the code's imports). The run-level
    settings (max steps, planning, approval mode, the tools offered) are given to each run instead
    (`run_arguments`), so changing them builds nothing. The agent holds every tool this server offers (and
    `ask_user`); each run offers the model the ones its settings chose."""
    from agents import CodeAgent, ToolCallingAgent
    from agents.executor.backend import SandboxLimits

    if settings.hf_token and settings.model.startswith("hf:"):
        from agents.models import load_model as load

        model = load(settings.model, token=settings.hf_token,  # the visitor's own: never shared between sessions
                     **model_options(settings.model, config))
    else:
        model = load_model(settings.model, config)
    built: list[weakref.ref[Any]] = []  # the agent, once made (weakly: no cycle through its tools): its
    # sandbox's host says where the workspace's files are

    def read(relpath: str, max_bytes: int) -> bytes:
        """A tool's read of the session's workspace, through the agent's sandbox host (on its own disk or not)."""
        from ui.session.workspace_access import files_of

        sandbox = getattr(built[0](), "live_sandbox", None) if built else None
        return files_of(getattr(sandbox, "host", None), workdir).read(relpath, max_bytes)

    tools = [t.for_workspace(workdir, read) if hasattr(t, "for_workspace") else t
             for t in select_tools(offered_tool_names(config))]
    if not any(getattr(t, "name", "") == "ask_user" for t in tools):  # always there: the model may ask the person
        from agents.tooling.ask_user import AskUserTool
        tools.append(AskUserTool())
    if settings.agent_type == "tool-calling":
        return ToolCallingAgent(tools=tools, model=model, workdir=str(workdir), max_steps=settings.max_steps,
                                planning_interval=settings.planning_interval, verbosity=0,
                                max_tokens_per_run=config.max_tokens_per_run, context_budget=config.context_budget,
                                pause_on_decision=PAUSE_ON_DECISION)
    agent = CodeAgent(tools=tools, model=model, workdir=str(workdir),
                     authorized_imports=list(settings.authorized_imports),
                     executor_timeout_s=config.exec_timeout_s, sandbox=config.sandbox,
                     sandbox_pool=config.sandbox_pool > 0, sandbox_limits=SandboxLimits(min_free_mb=config.min_free_mb),
                     use_structured_outputs_internally=config.structured_code,
                     answer_checks=config.answer_checks,
                     answer_agreement=config.answer_agreement, max_steps=settings.max_steps,
                     planning_interval=settings.planning_interval, verbosity=0,
                     max_tokens_per_run=config.max_tokens_per_run, context_budget=config.context_budget,
                     pause_on_decision=PAUSE_ON_DECISION)
    built.append(weakref.ref(agent))
    return agent


def offered_tool_names(config: AppConfig) -> tuple[str, ...]:
    """The tools a visitor of this server may enable (AGENTDECK_TOOLS, else every tool of the registry): what a
    session's agent is built with, so choosing others in the form builds no new agent."""
    available = tuple(name for name, _ in available_tools())
    if config.allowed_tools is None or config.free_choice:
        return available
    return tuple(name for name in available if name in config.allowed_tools)


def run_arguments(agent: Any, settings: RunSettings, approval_mode: str) -> dict[str, Any]:
    """The keyword arguments of `agent.run` that apply `settings`' run-level part and the approval mode to one
    run (agents/loop/run_options.py). Planning follows the settings and the mode, run by run: the interval set
    in the form, else, when the mode reviews plans, one plan at the start of the run (its whole step budget),
    else none; so leaving Review plans leaves no planning behind. The tools offered are the chosen ones the
    agent holds (a tiny model's profile keeps fewer), with `ask_user` always. {} for an agent that is not a
    MultiStepAgent (tests' stand-ins)."""
    from agents.decisions import ApprovalPolicy
    from agents.loop.base import MultiStepAgent

    if not isinstance(agent, MultiStepAgent):
        return {}
    policy = ApprovalPolicy.from_mode(approval_mode)
    planning = settings.planning_interval or (settings.max_steps if policy.review_plans else 0)
    held = agent.runner.tools
    tools = [name for name in (*settings.tools, "ask_user") if name in held]
    return {"max_steps": settings.max_steps, "planning_interval": planning, "approval_policy": policy,
            "tools": tools}


def warm_up_sandboxes(config: AppConfig) -> None:
    """Start the warm pool for the code agent `build_agent` makes with the operator's default imports."""
    from agents import CodeAgent
    from agents.executor.backend import SandboxLimits

    CodeAgent.warm_up(config.authorized_imports, config.exec_timeout_s, config.sandbox,
                      SandboxLimits(min_free_mb=config.min_free_mb), pool_size=config.sandbox_pool)
