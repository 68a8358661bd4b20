"""RunOptions: settings that apply to one run only (`agent.run(task, max_steps=..., planning_interval=...,
approval_policy=..., tools=...)`), so a program (or the workbench) changes them between runs without building a
new agent, model or sandbox. The agent keeps its own values as the defaults of every run that does not give one.
"""
from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from agents.decisions import ApprovalPolicy
from agents.decisions.pending import PendingDecision
from agents.errors import ConfigurationError


@dataclass(frozen=True)
class RunOptions:
    """What one run changes of its agent's settings; None everywhere is the agent's own."""
    #: The most action steps this run takes (at least 1).
    max_steps: int | None = None
    #: Plan every this many steps in this run; 0 is no planning this run (None: the agent's interval).
    planning_interval: int | None = None
    #: What this run (and the managed agents it calls) pauses for.
    approval_policy: ApprovalPolicy | None = None
    #: The names of the agent's tools (and managed agents) this run offers the model; `final_answer` always.
    tools: tuple[str, ...] | None = None

    @classmethod
    def make(cls, max_steps: int | None = None, planning_interval: int | None = None,
             approval_policy: ApprovalPolicy | str | None = None,
             tools: Collection[str] | None = None) -> RunOptions:
        """Checked options from `run`'s keyword arguments: a wrong type or value is refused before the run."""
        if max_steps is not None and (not _is_int(max_steps) or max_steps < 1):
            raise ConfigurationError(f"max_steps must be a whole number of at least 1, not {max_steps!r}.")
        if planning_interval is not None and (not _is_int(planning_interval) or planning_interval < 0):
            raise ConfigurationError(f"planning_interval must be a whole number of steps (0: no planning this "
                                     f"run), or None for the agent's own, not {planning_interval!r}.")
        if isinstance(approval_policy, str):
            approval_policy = ApprovalPolicy.from_mode(approval_policy)
        elif approval_policy is not None and not isinstance(approval_policy, ApprovalPolicy):
            raise ConfigurationError("approval_policy must be an ApprovalPolicy or a mode name (autonomous, "
                                     f"review_plans, approve_code, approve_tools, all), not {approval_policy!r}.")
        names: tuple[str, ...] | None = None
        if tools is not None:
            if isinstance(tools, str) or not all(isinstance(name, str) for name in tools):
                raise ConfigurationError("tools must be a list of tool names, e.g. tools=['web_search'].")
            names = tuple(dict.fromkeys(tools))
        return cls(max_steps=max_steps, planning_interval=planning_interval, approval_policy=approval_policy,
                   tools=names)

    def offered(self, callables: dict[str, Any]) -> dict[str, Any] | None:
        """This run's tools among the agent's `callables` (by name), or None for all of them; a name the agent
        does not have is refused, naming the ones it has."""
        if self.tools is None:
            return None
        unknown = [name for name in self.tools if name not in callables]
        if unknown:
            raise ConfigurationError(f"This agent has no tool named {', '.join(map(repr, unknown))}; it has "
                                     f"{', '.join(sorted(callables)) or 'none'}. A run offers a subset of the "
                                     "agent's tools: give the agent every tool a run may offer.")
        keep = set(self.tools) | {"final_answer"}
        return {name: tool for name, tool in callables.items() if name in keep}


def resume_options(pending: PendingDecision, callables: dict[str, Any]) -> RunOptions:
    """The options of the run that resumes `pending`: the paused run's own (its step limit, planning, what it
    paused for and the tools it offered that the agent still has), so the answer goes on as that run would."""
    tools = None if pending.tools is None else tuple(name for name in pending.tools if name in callables)
    return RunOptions(max_steps=pending.max_steps, planning_interval=pending.planning_interval or 0,
                      approval_policy=pending.approval_policy(), tools=tools)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
