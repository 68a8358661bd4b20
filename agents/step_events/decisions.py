"""A person's decisions as events, and what the model proposed before a person's edit replaced it in the step.

Part of the one mapping from memory steps to events (agents/step_events/__init__.py says how it is used).
A decision record is the dict agents/decisions/broker.py keeps in the step: request_id, kind, proposed, asked_at,
outcome, detail, edited, decided_at, waited_s and (when a page showed it) shown_at.
"""
from __future__ import annotations

from typing import Any, TypeGuard, get_args

from agents.events import DecisionMade, DecisionOutcome, DecisionRequested, Event, RequestKind
from agents.memory.steps import ActionStep, PlanningStep
from agents.step_events.frames import Fields, recorded_time


def proposed(step: PlanningStep | ActionStep, kind: str, key: str, recorded: Any) -> Any:
    """What the model proposed, as a person was asked about it (their edit replaces it in the step)."""
    for record in step.decisions:
        if isinstance(record, dict) and record.get("kind") == kind and isinstance(record.get("proposed"), dict) \
                and key in record["proposed"]:
            return record["proposed"][key]
    return recorded


def decision_requested(record: dict[str, Any], kind: RequestKind, fields: Fields) -> DecisionRequested:
    """A decision record as its request."""
    return DecisionRequested(**fields, request_id=str(record.get("request_id", "")),
                             request_kind=kind, payload=dict(record.get("proposed") or {}),
                             timestamp=recorded_time(record.get("asked_at") or 0.0))


def decision_made(record: dict[str, Any], kind: RequestKind, outcome: DecisionOutcome,
                  fields: Fields) -> DecisionMade:
    return DecisionMade(**fields, request_id=str(record.get("request_id", "")), request_kind=kind, outcome=outcome,
                        detail=str(record.get("detail") or ""), edited=record.get("edited"),
                        waited_s=_seconds_or_none(record.get("waited_s")),
                        timestamp=recorded_time(record.get("decided_at") or 0.0))


def _seconds_or_none(value: Any) -> float | None:
    """A recorded number of seconds, or None (a record saved before it was kept)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def decision_events(record: Any, fields: Fields) -> list[Event]:
    if not isinstance(record, dict):  # an unreadable record (a value that was not JSON): nothing to show
        return []
    kind, outcome = record.get("kind"), record.get("outcome")
    if not _is_request_kind(kind) or not _is_outcome(outcome):  # a kind or outcome the loop never writes
        return []
    return [decision_requested(record, kind, fields), decision_made(record, kind, outcome, fields)]


# Values read from a saved memory are strings; these say which ones the events' Literal fields can take.
def _is_request_kind(value: object) -> TypeGuard[RequestKind]:
    return value in get_args(RequestKind)


def _is_outcome(value: object) -> TypeGuard[DecisionOutcome]:
    return value in get_args(DecisionOutcome)
