"""Managed agents: a sub-agent wrapped as a tool its manager calls from code or a JSON tool call."""
from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from agents.decisions import ApprovalPolicy
from agents.decisions.pending import RunPaused
from agents.errors import AgentInterrupted, ToolError
from agents.events import Event
from agents.loop.result import RunResult, RunState
from agents.prompts import render
from agents.tooling.base import Tool
from agents.tooling.context import ToolContext


class TeamMember(Protocol):
    """What a manager needs of a managed agent (MultiStepAgent provides it)."""

    name: str | None
    description: str | None
    prompt_templates: dict[str, Any]

    def run_for_manager(self, task: str, emit: Callable[[Event], None], parent_id: str,
                        additional_args: dict[str, Any] | None = None,
                        event_loop: asyncio.AbstractEventLoop | None = None,
                        approval_policy: ApprovalPolicy | None = None) -> RunResult: ...


class ManagedAgentTool(Tool):
    """Runs the sub-agent on the manager's thread; its events go to the manager's stream, with
    `parent_id` set to the id of the call that started it."""

    output_type = "string"
    takes_context = True  # the sub-run emits into the manager's run

    def __init__(self, agent: TeamMember) -> None:
        self.name = agent.name or ""  # the manager checked it has a name and a description
        self.description = agent.description or ""
        self.inputs = {
            "task": {"type": "string", "description": "The task for this team member, with all details it needs."},
            "additional_args": {"type": "object", "nullable": True,
                                "description": "Values to hand over (data, file paths, earlier results)."},
        }
        self.agent = agent
        super().__init__()

    def forward(self, task: str, additional_args: dict[str, Any] | None = None, *, context: ToolContext) -> str:
        full_task = render(self.agent.prompt_templates, "managed_agent.task", name=self.name, task=task)
        run = context.run
        loop = getattr(run, "event_loop", None)  # the manager's, under arun/astream
        policy = getattr(run, "approval_policy", None)  # a policy the manager's run was given
        broker = getattr(self.agent, "broker", None)
        outer = getattr(getattr(run, "broker", None), "outer", None) or run  # the top-level run, however nested
        if broker is not None:
            broker.outer = outer  # its decisions pause (and are granted on resume) as the manager's run's
        try:
            result = self.agent.run_for_manager(full_task, emit=run.emit, parent_id=context.call_id,
                                                additional_args=additional_args, event_loop=loop,
                                                approval_policy=policy)
        finally:
            if broker is not None:
                broker.outer = None
        paused = getattr(outer, "paused", None)
        if result.state is RunState.PAUSED and paused is not None:  # the manager's run ends at the same request
            memory = getattr(self.agent, "memory", None)
            if memory is not None:  # the manager's memory keeps it: this fresh sub-run is made again on resume
                memory.pending = None
            raise RunPaused(paused)
        if result.state is RunState.INTERRUPTED:
            raise AgentInterrupted(f"Managed agent {self.name!r} was stopped.")
        if result.state is RunState.ERROR:
            raise ToolError(f"Managed agent {self.name!r} failed: {result.error}")
        return render(self.agent.prompt_templates, "managed_agent.report", name=self.name,
                      final_answer=result.output)
