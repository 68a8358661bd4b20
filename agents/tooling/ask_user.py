"""ask_user: the model asks the person a question; the run pauses until they answer."""
from __future__ import annotations

from agents.decisions import DecisionKind, Outcome, current_broker
from agents.errors import ToolError
from agents.tooling.base import Tool


class AskUserTool(Tool):
    name = "ask_user"
    description = ("Ask the user a question when you need information or a choice only they can give. "
                   "Returns their answer as text.")
    inputs = {"question": {"type": "string", "description": "The question, short and specific."}}
    output_type = "string"

    def forward(self, question: str) -> str:
        active = current_broker()
        if active is None or active[1] is None:
            raise ToolError("ask_user can only be used inside an agent run.")
        broker, context = active
        decision = broker.ask(DecisionKind.QUESTION, {"question": question}, context)
        if decision is None or decision.outcome is Outcome.REJECT:
            reason = decision.reason if decision else ""
            return f"The user declined to answer{': ' + reason if reason else '.'}"
        return decision.answer
