"""A tool call: its record as it went (kept with the step), and the events made from it.

Part of the one mapping from memory steps to events (agents/step_events/__init__.py says how it is used).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from agents.events import Event, InjectionFlagged, ToolCallProposed, ToolCallResult
from agents.memory.steps import ActionStep
from agents.step_events.decisions import decision_events
from agents.step_events.frames import Fields, recorded_time

#: How a rejected call's output began before records kept `rejected` (the reason follows).
_LEGACY_REJECTION = "Rejected by the user: "


@dataclass
class ToolCallRecord:
    """One tool call as it went; kept in `ActionStep.call_records` as a plain dict (`as_dict`)."""
    call_id: str
    name: str
    arguments: dict[str, Any]
    started_at: float = field(default_factory=time.time)
    log_offset: int = 0  # characters the step's code had printed when the call started
    output: str = ""  # as the person was shown it (cut to the event's limit); a rejected call's: the reason
    is_error: bool = False
    rejected: bool = False  # a person rejected the call: it never ran
    flagged: str = ""  # the excerpt of the output that looked like instructions, if any
    ended_at: float = 0.0
    finished: bool = False

    def as_dict(self) -> dict[str, Any]:
        from agents.memory.codec import json_safe

        return {"call_id": self.call_id, "name": self.name, "arguments": json_safe(self.arguments),
                "started_at": self.started_at, "log_offset": self.log_offset, "output": self.output,
                "is_error": self.is_error, "rejected": self.rejected, "flagged": self.flagged,
                "ended_at": self.ended_at, "finished": self.finished}

    @classmethod
    def from_dict(cls, data: Any) -> ToolCallRecord | None:
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            return None
        arguments = data.get("arguments")
        output, is_error = str(data.get("output") or ""), bool(data.get("is_error"))
        rejected = bool(data.get("rejected"))
        if is_error and not rejected and output.startswith(_LEGACY_REJECTION):  # saved before `rejected` was kept
            output, is_error, rejected = output[len(_LEGACY_REJECTION):], False, True
        return cls(call_id=str(data.get("call_id", "")), name=data["name"],
                   arguments=dict(arguments) if isinstance(arguments, dict) else {},
                   started_at=float(data.get("started_at") or 0.0), log_offset=int(data.get("log_offset") or 0),
                   output=output, is_error=is_error, rejected=rejected,
                   flagged=str(data.get("flagged") or ""), ended_at=float(data.get("ended_at") or 0.0),
                   finished=bool(data.get("finished")))


def tool_call_proposed(call: ToolCallRecord, fields: Fields) -> ToolCallProposed:
    return ToolCallProposed(**fields, call_id=call.call_id, tool_name=call.name, arguments=dict(call.arguments),
                            timestamp=recorded_time(call.started_at))


def injection_flagged(call: ToolCallRecord, fields: Fields) -> InjectionFlagged:
    return InjectionFlagged(**fields, source=f"tool:{call.name}", excerpt=call.flagged)


def tool_call_result(call: ToolCallRecord, fields: Fields) -> ToolCallResult:
    return ToolCallResult(**fields, call_id=call.call_id, tool_name=call.name, output=call.output,
                          is_error=call.is_error, rejected=call.rejected, timestamp=recorded_time(call.ended_at))


# ----- a recorded call replayed -------------------------------------------------------------------------
def call_events(call: ToolCallRecord, decisions: list[Any], fields: Fields) -> list[Event]:
    """A call's events; the decisions made during it are taken from the head of `decisions` (in time order):
    its approval, and the question of an `ask_user` call."""
    events: list[Event] = [tool_call_proposed(call, fields)]
    while decisions:
        head = decisions[0]
        kind = head.get("kind") if isinstance(head, dict) else None
        payload = head.get("proposed") if isinstance(head, dict) else None
        ours = (kind == "tool_call" and isinstance(payload, dict) and payload.get("call_id") == call.call_id) \
            or (kind == "question" and call.name == "ask_user")
        if not ours:
            break
        events += decision_events(decisions.pop(0), fields)
    if call.flagged:
        events.append(injection_flagged(call, fields))
    if call.finished:
        events.append(tool_call_result(call, fields))
    return events


def legacy_calls(step: ActionStep, fields: Fields) -> list[Event]:
    """A tool-calling step saved before calls were recorded: the calls, and what came back as one text."""
    from agents.injection import unfence

    events: list[Event] = []
    for number, call in enumerate(step.tool_calls):
        call_id = call.id or f"{fields['run_id']}-{step.step_number}-{number}"
        events.append(ToolCallProposed(**fields, call_id=call_id, tool_name=call.name,
                                       arguments=dict(call.arguments or {})))
        if len(step.tool_calls) == 1:
            events.append(ToolCallResult(**fields, call_id=call_id, tool_name=call.name,
                                         output=unfence(step.observations or "")))
    return events
