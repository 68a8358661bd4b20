"""DecisionBroker: asks for a decision when the policy says so, emitting the request and the outcome as events.

The run that asks is always passed in (`context`); the broker keeps no ambient state, so nothing of a
finished run can answer a question asked outside it.
"""
from __future__ import annotations

import time
from typing import Any, Protocol

from agents import step_events
from agents.decisions.deciders import Decider
from agents.decisions.pending import Grant, RunPaused, request_key, waited_s
from agents.decisions.policy import ApprovalPolicy
from agents.decisions.types import Decision, DecisionKind, DecisionRequest, Outcome
from agents.events import Event, new_id
from agents.memory.codec import json_safe


class Rejected(Exception):
    """Raised inside the loop when a person rejected an action; the reason goes back to the model."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _EventContext(Protocol):
    run_id: str
    step: int
    parent_id: str | None

    paused: DecisionRequest | None

    def emit(self, event: Event) -> None: ...

    def check_interrupt(self) -> None: ...


class DecisionBroker:
    def __init__(self, policy: ApprovalPolicy, decider: Decider) -> None:
        self.policy = policy
        self.decider = decider
        #: While a managed agent runs inside its manager's run (agents/loop/managed.py): that run, whose pause
        #: mode and resumed answer its decisions follow, so a sub-agent's decision ends the manager's run too
        #: (no thread waits) and the manager's resume grants it when the sub-agent asks it again.
        self.outer: _EventContext | None = None

    def for_policy(self, policy: ApprovalPolicy | None) -> DecisionBroker:
        """This broker, or one with a run's own `policy` (same decider, same outer run)."""
        if policy is None:
            return self
        broker = DecisionBroker(policy, self.decider)
        broker.outer = self.outer
        return broker

    def ask(self, kind: DecisionKind, payload: dict[str, Any], context: _EventContext,
            tool_name: str = "", tool_flagged: bool = False) -> Decision | None:
        """Return the decision, or None when the policy lets this action through without asking.

        The decision is recorded in the step (`context.decisions`): what was asked, what was decided and when;
        its events are made from that record (agents/step_events/), so a reopened chat shows it the same."""
        run = self.outer or context  # the run that pauses: a managed agent's manager's
        granted = _granted(kind, payload, run)  # a resumed run's answer applies whatever the policy is now
        if granted is None and not self.policy.needs_decision(kind, tool_name=tool_name, tool_flagged=tool_flagged):
            return None
        earlier = getattr(run, "paused", None)
        if granted is None and earlier is not None:  # code that caught the pause asked again: the first one stands
            raise RunPaused(earlier)
        asked_at = (granted.asked_at if granted else 0.0) or time.time()  # a resumed request: when it was asked
        request = DecisionRequest(id=granted.request_id if granted else new_id(), kind=kind, payload=payload,
                                  run_id=context.run_id, step=context.step, asked_at=asked_at)
        pausing = bool(getattr(run, "pausing", False))
        register = getattr(self.decider, "register", None) if granted is None and not pausing else None
        if register is not None:  # a thread will wait for it: answerable before its event goes out
            register(request)
        fields = {"run_id": context.run_id, "step": context.step, "parent_id": context.parent_id}
        record: dict[str, Any] = {"request_id": request.id, "kind": kind.value, "proposed": json_safe(payload),
                                  "asked_at": asked_at}
        note = getattr(context, "note_pending", None) if granted is None and not pausing else None
        if note is not None:  # before the event: a chat saved once the event is shown holds the request
            note(request)
        if granted is None:  # a resumed run's request was shown when it was asked: its answer follows now
            context.emit(step_events.decision_requested(record, kind.value, fields))
        if granted is not None:  # a resumed run: the person's answer to this very request (agents/decisions/pending.py)
            decision: Decision | None = granted.decision
        elif pausing:  # pause mode: the run ends here, no thread waits
            run.paused = request
            raise RunPaused(request)
        else:  # the run's thread waits; meanwhile a saved memory holds the request, resumable after a restart
            try:
                decision = self.decider.decide(request, self.policy.timeout_s)
            finally:
                if note is not None:
                    note(None)
        context.check_interrupt()
        detail = ""
        if decision is None:
            decision = self.policy.timeout_decision
            detail = "time limit reached; default applied. "
        decision.validate_for(request)
        detail += decision.reason or decision.answer
        decided_at = (granted.decided_at if granted else 0.0) or time.time()  # a decision made again: its time
        shown_at = granted.shown_at if granted else request.shown_at  # when a person first saw it (0: never)
        record.update(outcome=decision.outcome.value, detail=detail, decided_at=decided_at,
                      edited=json_safe(decision.edited) if decision.outcome is Outcome.EDIT else None,
                      waited_s=waited_s(asked_at, shown_at, decided_at), **({"shown_at": shown_at} if shown_at else {}))
        recorded = getattr(context, "decisions", None)
        if recorded is not None:
            recorded.append(record)
        context.emit(step_events.decision_made(record, kind.value, decision.outcome.value, fields))
        return decision


def _granted(kind: DecisionKind, payload: dict[str, Any], context: Any) -> Grant | None:
    """The resumed run's decision if this request is the one it was given for (same kind and content), once."""
    grant = getattr(context, "grant", None)
    if grant is None:
        return None
    pending, decision = grant
    key = request_key(kind, json_safe(payload))
    earlier: Grant | None = pending.take_earlier(key)  # made before the pause, in the step
    if earlier is not None:
        return earlier
    if request_key(pending.kind, pending.payload) != key:
        return None
    context.grant = None
    # made when the person took the decision (the click), not when the resumed run reached this request
    return Grant(pending.request_id, decision, pending.asked_at or time.time(), pending.taken_at, pending.shown_at)
