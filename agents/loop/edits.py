"""A person's edits of an action step: recorded as what ran, and told to the model.

Why: when a person edits code or a tool call's arguments before approving, what ran is not what the model
wrote. The step keeps the model's reply as it was (`model_output`), records what ran (`code`, the arguments in
`tool_calls`) and marks itself `edited_by_user`; the model's next prompt says, before the step's observation,
that the person changed it and what ran instead, so the model never reasons about code that did not run.
"""
from __future__ import annotations

import json
from typing import Any

from agents.decisions import DecisionKind, DecisionRecord
from agents.memory.steps import ActionStep
from agents.prompts import render


def edit_records(step: ActionStep) -> list[DecisionRecord]:
    """The edits among the step's decisions, in the order they were made."""
    records = (DecisionRecord.from_dict(data) for data in step.decisions)
    return [record for record in records if record is not None and record.is_edit]


def apply_edits(step: ActionStep) -> None:
    """Make the step's record say what ran: tool calls carry the arguments the person approved, and the step
    is marked as edited. (Edited code is recorded as `step.code` by the code agent when it runs it.)"""
    edits = edit_records(step)
    if not edits:
        return
    step.edited_by_user = True
    arguments = {record.proposed.get("call_id"): record.edited for record in edits
                 if record.kind == DecisionKind.TOOL_CALL.value and isinstance(record.edited, dict)}
    for call in step.tool_calls:
        if call.id in arguments:
            call.arguments = dict(arguments[call.id])


def edit_notes(templates: dict[str, Any], step: ActionStep) -> list[str]:
    """What the model is told about the person's edits of this step, one note per edit."""
    notes: list[str] = []
    for record in edit_records(step):
        if record.kind == DecisionKind.CODE.value and isinstance(record.edited, str):
            notes.append(render(templates, "observations.code_edited_by_user", code=record.edited))
        elif record.kind == DecisionKind.TOOL_CALL.value and isinstance(record.edited, dict):
            arguments = json.dumps(record.edited, ensure_ascii=False, default=str)
            notes.append(render(templates, "observations.arguments_edited_by_user", arguments=arguments,
                                tool_name=str(record.proposed.get("tool_name") or "a tool")))
    return notes
