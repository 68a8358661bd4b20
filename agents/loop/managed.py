"""Managed agents: a sub-agent wrapped as a tool its manager calls from code or a JSON tool call."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agents.errors import AgentInterrupted, ToolError
from agents.loop.result import RunState
from agents.loop.tool_runner import current_call
from agents.prompts import render
from agents.tooling.base import Tool

if TYPE_CHECKING:
    from agents.loop.base import MultiStepAgent


class ManagedAgentTool(Tool):
    """Runs the sub-agent on the manager's thread; its events go to the manager's stream, with
    `parent_id` set to the id of the call that started it."""

    output_type = "string"

    def __init__(self, agent: MultiStepAgent) -> None:
        self.name = agent.name  # type: ignore[misc]
        self.description = agent.description  # type: ignore[misc]
        self.inputs = {  # type: ignore[misc]
            "task": {"type": "string", "description": "The task for this team member, with all details it needs."},
            "additional_args": {"type": "object", "nullable": True,
                                "description": "Values to hand over (data, file paths, earlier results)."},
        }
        self.agent = agent
        super().__init__()

    def forward(self, task: str, additional_args: dict[str, Any] | None = None) -> str:
        call = current_call()
        if call is None:
            raise ToolError(f"Managed agent {self.name!r} can only be called from its manager's run.")
        full_task = render(self.agent.prompt_templates, "managed_agent.task", name=self.name, task=task)
        result = self.agent._execute(full_task, emit=call.context.emit_function, reset=True,
                                     additional_args=additional_args, parent_id=call.call_id)
        if result.state is RunState.INTERRUPTED:
            raise AgentInterrupted(f"Managed agent {self.name!r} was stopped.")
        if result.state is RunState.ERROR:
            raise ToolError(f"Managed agent {self.name!r} failed: {result.error}")
        return render(self.agent.prompt_templates, "managed_agent.report", name=self.name,
                      final_answer=result.output)
