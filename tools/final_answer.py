"""final_answer: the tool that ends a run with its answer."""
from __future__ import annotations

from typing import Any

from tools.base import Tool


class FinalAnswerTool(Tool):
    name = "final_answer"
    description = "Give the final answer to the task. Calling it ends the task."
    inputs = {"answer": {"type": "any", "description": "The final answer to the task."}}
    output_type = "any"

    def forward(self, answer: Any) -> Any:
        return answer
