"""final_answer: the tool an agent calls to finish a run with its answer.

Why a tool: the ToolCallingAgent only acts through tool calls, so ending the run is one too; the agent
loop recognises a call to `final_answer` and stops with the given value. The answer may be any
value (text, a number, a list, an image...), so the input type is `any`.
"""
from __future__ import annotations

from typing import Any

from agents.tooling.base import Tool


class FinalAnswerTool(Tool):
    """Returns its argument unchanged; the agent loop treats calling it as the end of the run."""

    name = "final_answer"
    description = "Gives the final answer to the task and ends the run. Call it once you have the answer."
    inputs = {"answer": {"type": "any", "description": "The final answer to the task."}}
    output_type = "any"

    def forward(self, answer: Any) -> Any:
        return answer
