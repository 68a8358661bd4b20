"""ask_user: the model asks the person a question; the run pauses until they answer."""
from __future__ import annotations

from agents.decisions import DecisionKind, Outcome
from agents.tooling.base import Tool
from agents.tooling.context import ToolContext


class AskUserTool(Tool):
    name = "ask_user"
    description = ("Ask the user a question when you need information or a choice only they can give. "
                   "Returns their answer as text.")
    inputs = {"question": {"type": "string", "description": "The question, short and specific."}}
    output_type = "string"
    takes_context = True  # the question goes through the run's decisions

    def forward(self, question: str, context: ToolContext) -> str:
        decision = context.run.ask(DecisionKind.QUESTION, {"question": question})
        if decision is None or decision.outcome is Outcome.REJECT:
            reason = decision.reason if decision else ""
            return f"The user declined to answer{': ' + reason if reason else '.'}"
        return decision.answer
