"""DecisionBroker: asks for a decision when the policy says so, emitting the request and the outcome as events."""
from __future__ import annotations

import threading
from typing import Any, Protocol

from agents.decisions.deciders import Decider
from agents.decisions.policy import ApprovalPolicy
from agents.decisions.types import Decision, DecisionKind, DecisionRecord, DecisionRequest, Outcome
from agents.events import DecisionMade, DecisionRequested, Event, new_id


class Rejected(Exception):
    """Raised inside the loop when a person rejected an action; the reason goes back to the model."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _EventContext(Protocol):
    run_id: str
    step: int
    parent_id: str | None

    def emit(self, event: Event) -> None: ...

    def check_interrupt(self) -> None: ...


_local = threading.local()


def current_broker() -> tuple[DecisionBroker, Any] | None:
    """The broker and run context of the tool call running on this thread (used by `ask_user`)."""
    return getattr(_local, "active", None)


class DecisionBroker:
    def __init__(self, policy: ApprovalPolicy, decider: Decider) -> None:
        self.policy = policy
        self.decider = decider

    def bind_to_thread(self, context: _EventContext | None) -> None:
        _local.active = (self, context) if context is not None else None

    def ask(self, kind: DecisionKind, payload: dict[str, Any], context: _EventContext,
            tool_name: str = "", tool_flagged: bool = False) -> Decision | None:
        """Return the decision, or None when the policy lets this action through without asking."""
        if not self.policy.needs_decision(kind, tool_name=tool_name, tool_flagged=tool_flagged):
            return None
        request = DecisionRequest(id=new_id(), kind=kind, payload=payload, run_id=context.run_id, step=context.step)
        register = getattr(self.decider, "register", None)
        if register is not None:
            register(request)
        context.emit(DecisionRequested(run_id=context.run_id, step=context.step, parent_id=context.parent_id,
                                       request_id=request.id, request_kind=kind.value, payload=payload))
        decision = self.decider.decide(request, self.policy.timeout_s)
        context.check_interrupt()
        detail = ""
        if decision is None:
            decision = self.policy.timeout_decision
            detail = "time limit reached; default applied. "
        decision.validate_for(request)
        detail += decision.reason or decision.answer
        edited = decision.edited if decision.outcome is Outcome.EDIT else None
        decisions = getattr(context, "decisions", None)
        if decisions is not None:  # the step keeps it: memory, next prompt and reopened chat say what was changed
            decisions.append(DecisionRecord(request.id, kind.value, decision.outcome.value, detail, edited,
                                            dict(payload)).to_dict())
        context.emit(DecisionMade(run_id=context.run_id, step=context.step, parent_id=context.parent_id,
                                  request_id=request.id, request_kind=kind.value, outcome=decision.outcome.value,
                                  detail=detail, edited=edited))
        return decision
