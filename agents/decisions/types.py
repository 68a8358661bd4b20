"""Decision requests (a paused run asking a person) and decisions (the answer)."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from agents.errors import ConfigurationError
from agents.events import DecisionOutcome, RequestKind


class DecisionKind(StrEnum):
    _value_: RequestKind  # the values are the events' `request_kind`s
    PLAN = "plan"            # review or edit the plan just made
    CODE = "code"            # approve, edit or reject code before it runs
    TOOL_CALL = "tool_call"  # approve, edit the arguments of, or reject a tool call
    QUESTION = "question"    # the model asked the user something (ask_user)


class Outcome(StrEnum):
    _value_: DecisionOutcome
    APPROVE = "approve"
    EDIT = "edit"
    REJECT = "reject"
    ANSWER = "answer"


@dataclass
class DecisionRequest:
    id: str
    kind: DecisionKind
    # plan: {"plan"}; code: {"code"}; tool_call: {"tool_name", "arguments", "call_id"}; question: {"question"}
    payload: dict[str, Any]
    run_id: str = ""
    step: int = 0
    #: When it was asked: a paused run's record keeps it, so its resumed and its replayed request say the same.
    asked_at: float = 0.0
    #: When a page first showed it to a person (0: not yet): a run that waits in its thread for the decision
    #: counts the decision's time from then (agents/decisions/pending.py `waited_s`; the app marks the requests
    #: `MultiStepAgent.pending_decisions` gives).
    shown_at: float = 0.0

    def mark_shown(self, when: float) -> None:
        """A page shows this request at `when`: its first showing is kept."""
        self.shown_at = first_showing(self.shown_at, when)


def first_showing(shown_at: float, when: float) -> float:
    """When a request was first shown, given the time it was shown before (0.0: never) and a showing at `when`:
    the earliest, whichever of several tabs reports first."""
    return min(shown_at, when) if shown_at > 0 and when > 0 else shown_at or max(when, 0.0)


@dataclass
class Decision:
    outcome: Outcome
    edited: Any = None   # the edited plan (str), code (str) or arguments (dict)
    reason: str = ""     # why it was rejected
    answer: str = ""     # the answer to a question
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def approve(cls) -> Decision:
        return cls(Outcome.APPROVE)

    @classmethod
    def edit(cls, edited: Any) -> Decision:
        return cls(Outcome.EDIT, edited=edited)

    @classmethod
    def reject(cls, reason: str = "") -> Decision:
        return cls(Outcome.REJECT, reason=reason)

    @classmethod
    def reply(cls, answer: str) -> Decision:
        return cls(Outcome.ANSWER, answer=answer)

    def validate_for(self, request: DecisionRequest) -> None:
        """Refuse decisions that do not fit the request, with the fix."""
        if request.kind is DecisionKind.QUESTION:
            if self.outcome not in (Outcome.ANSWER, Outcome.REJECT):
                raise ConfigurationError("A question needs Decision.reply(answer) or Decision.reject(reason).")
            return
        if self.outcome is Outcome.ANSWER:
            raise ConfigurationError(f"A {request.kind.value} request needs approve, edit or reject, not an answer.")
        if self.outcome is Outcome.EDIT:
            expected = dict if request.kind is DecisionKind.TOOL_CALL else str
            if not isinstance(self.edited, expected):
                raise ConfigurationError(
                    f"An edit of a {request.kind.value} must be a {expected.__name__}, "
                    f"got {type(self.edited).__name__}."
                )


@dataclass
class DecisionRecord:
    """A decision as a step keeps it (`step.decisions`, saved with the chat): what was asked, what the person
    chose, and for an edit both versions, so the memory, the model's next prompt and a reopened chat can all
    say what the person changed."""
    request_id: str
    kind: str                 # a DecisionKind value
    outcome: str              # an Outcome value
    detail: str = ""          # the reason of a rejection, the answer to a question, or a time-limit note
    edited: Any = None        # what ran instead: the edited plan or code (str) or arguments (dict)
    proposed: dict[str, Any] = field(default_factory=dict)  # the request's payload: what the agent proposed

    def to_dict(self) -> dict[str, Any]:
        return {"request_id": self.request_id, "kind": self.kind, "outcome": self.outcome, "detail": self.detail,
                "edited": self.edited, "proposed": dict(self.proposed)}

    @classmethod
    def from_dict(cls, data: Any) -> DecisionRecord | None:
        """The record in `data` (a step's saved decision), or None when it is not one: a saved chat may be old
        (no `proposed`) or hand-made, and reopening it must not fail on a record it cannot read."""
        if not isinstance(data, dict):
            return None
        request_id, kind, outcome, detail = (data.get(key, "") for key in ("request_id", "kind", "outcome", "detail"))
        texts = (request_id, kind, outcome, detail)
        if not all(isinstance(text, str) for text in texts) or not kind or not outcome:
            return None
        proposed = data.get("proposed")
        return cls(request_id, kind, outcome, detail, edited=data.get("edited"),
                   proposed=proposed if isinstance(proposed, dict) else {})

    @property
    def is_edit(self) -> bool:
        return self.outcome == Outcome.EDIT.value
