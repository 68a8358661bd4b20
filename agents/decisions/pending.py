"""A run that ended at a decision: what it asked, and where to pick up (`MultiStepAgent.resume`).

In pause mode (`run(..., pause_on_decision=True)`) a decision request asked during an action step ends the
run instead of holding its thread: the request and the model's reply of that step are recorded here, on the
agent's memory (`AgentMemory.pending`), and saved with it (signed, agents/memory/serialize.py). The answer
starts a new run of the same `run_id` that re-acts that step from the recorded reply with the decision
granted for that exact request (matched by kind and content, never by id alone), once and in that step only
(a later step's same request is asked anew): no thread waits meanwhile,
and the resume works in a new process on a loaded memory.

A decision asked from inside sandboxed code (a tool called from code, `ask_user` in code) cannot be resumed
mid-code: the step's code runs again from its start with the decision granted for that exact call, so what
the code did before the call happens twice (`in_code` says so; the app tells the person). The decisions made
earlier in that step (the code's own approval or edit) are made again as they were (`earlier`). A managed
agent's decision pauses its top-level run: the resume calls the sub-agent again from its task's start.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents.decisions.policy import ApprovalPolicy
from agents.decisions.types import Decision, DecisionKind, DecisionRequest, Outcome, first_showing
from agents.errors import AgentInterrupted


def request_key(kind: DecisionKind | str, payload: dict[str, Any]) -> tuple[str, str]:
    """What identifies a request across runs: its kind and content (a tool call's id is new each time)."""
    import json

    shown = {key: value for key, value in payload.items() if key != "call_id"}
    return str(kind), json.dumps(shown, sort_keys=True, default=repr)


@dataclass(frozen=True)
class Grant:
    """A decision a resumed run is given for one of its requests: the request's id, the decision, when it was
    asked, when it was made (0.0: unknown, now) and when a person was first shown it (0.0: never, see
    `waited_s`)."""
    request_id: str
    decision: Decision
    asked_at: float
    decided_at: float = 0.0
    shown_at: float = 0.0


def waited_s(asked_at: float, shown_at: float, decided_at: float) -> float:
    """How long a person took to decide: from when the request was first shown to them (`shown_at`) to their
    decision, or from the request itself when it was never shown (decided over the API). The request comes
    before the paused run's end reaches any page, so counting from it adds the time the page took to show it.
    The decision's event carries this (agents/step_events/decisions.py): a live and a reopened chat say the
    same, nothing is counted again when shown."""
    return max(0.0, decided_at - (shown_at or asked_at))


def _time_or_zero(value: Any) -> float:
    """A recorded time, or 0.0 (unknown: now) for anything but a finite, non-negative number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        return 0.0
    return float(value)


@dataclass
class PendingDecision:
    request_id: str
    kind: str                     # a DecisionKind value
    payload: dict[str, Any]
    run_id: str
    step_number: int
    #: The paused step's model reply: its text and native tool calls ({"id", "name", "arguments"}).
    reply_content: str = ""
    reply_tool_calls: list[dict[str, Any]] = field(default_factory=list)
    #: That reply's token usage and model time: the resumed step counts them as the step that never paused would
    #: (its title and the run's status line give the whole run's figures, not the resumed piece's).
    reply_input_tokens: int = 0
    reply_output_tokens: int = 0
    reply_model_s: float = 0.0
    #: How many steps the run had done before the paused one, its step limit and planning interval.
    steps_done: int = 0
    max_steps: int = 20
    planning_interval: int | None = None
    in_code: bool = False
    asked_at: float = 0.0
    #: What the paused run paused for and offered (its own `approval_policy` and `tools`, None: the agent's), so
    #: the resumed run, here or in another process, pauses and offers the same (agents/loop/run_options.py).
    policy: dict[str, Any] | None = None
    tools: list[str] | None = None
    #: The decisions already made in the paused step (its records: kind, proposed, outcome, detail, edited), made
    #: again as they were when the resume acts the step again (an approved or edited code step whose code then
    #: called a tool that paused: the code that re-runs is the person's version, not asked for again).
    earlier: list[dict[str, Any]] = field(default_factory=list)
    #: When the person's decision was taken to resume the run (0: not yet). Saved before the resumed step acts, so
    #: a chat reopened after a crash between the step's code running and its save knows the decision was made
    #: (its code may have run) and does not offer it again: approved code runs at most once.
    taken_at: float = 0.0
    #: When a page first showed this request to a person (0: not yet; the earliest of several tabs, `mark_shown`):
    #: the decision's time counts from then (`waited_s`). The request's own time (`asked_at`) stays as it was,
    #: so its event is the same live and replayed.
    shown_at: float = 0.0

    def mark_shown(self, when: float) -> None:
        """A page shows this request at `when`: its first showing is kept (`first_showing`); once the decision
        was taken, nothing changes."""
        if not self.taken_at:
            self.shown_at = first_showing(self.shown_at, when)

    def request(self) -> DecisionRequest:
        return DecisionRequest(id=self.request_id, kind=DecisionKind(self.kind), payload=dict(self.payload),
                               run_id=self.run_id, step=self.step_number, asked_at=self.asked_at)

    def to_dict(self) -> dict[str, Any]:
        return {"request_id": self.request_id, "kind": self.kind, "payload": self.payload, "run_id": self.run_id,
                "step_number": self.step_number, "reply_content": self.reply_content,
                "reply_tool_calls": self.reply_tool_calls, "reply_input_tokens": self.reply_input_tokens,
                "reply_output_tokens": self.reply_output_tokens, "reply_model_s": self.reply_model_s,
                "steps_done": self.steps_done,
                "max_steps": self.max_steps, "planning_interval": self.planning_interval, "in_code": self.in_code,
                "asked_at": self.asked_at, "policy": self.policy, "tools": self.tools, "earlier": self.earlier,
                **({"taken_at": self.taken_at} if self.taken_at else {}),
                **({"shown_at": self.shown_at} if self.shown_at else {})}

    def call_id_for(self, key: tuple[str, str]) -> str | None:
        """The id a call from code had when the request `key` was asked (this one or an earlier of the step): the
        resumed step's same call takes it again, so what the chat showed of it is the same call."""
        for kind, payload in [(self.kind, self.payload),
                              *((str(r.get("kind", "")), dict(r.get("proposed") or {})) for r in self.earlier)]:
            if request_key(kind, payload) == key and isinstance(payload.get("call_id"), str):
                return str(payload["call_id"])
        return None

    def take_earlier(self, key: tuple[str, str]) -> Grant | None:
        """The decision made earlier in the paused step for the request `key` (see `request_key`), once, with
        when it was asked and made (a resumed step makes it again: it keeps its own times)."""
        for index, record in enumerate(self.earlier):
            if request_key(str(record.get("kind", "")), dict(record.get("proposed") or {})) == key:
                del self.earlier[index]
                return Grant(str(record.get("request_id", "")), _decision_of(record),
                             _time_or_zero(record.get("asked_at")), _time_or_zero(record.get("decided_at")),
                             _time_or_zero(record.get("shown_at")))
        return None

    def approval_policy(self) -> ApprovalPolicy | None:
        """The paused run's own approval policy, or None (the agent's)."""
        if self.policy is None:
            return None
        return ApprovalPolicy(review_plans=bool(self.policy.get("review_plans")),
                              approve_code=bool(self.policy.get("approve_code")),
                              tool_calls=self.policy.get("tool_calls", "none"),
                              tools_needing_approval=frozenset(self.policy.get("tools_needing_approval", ())))

    @classmethod
    def from_dict(cls, data: Any) -> PendingDecision:
        """The record in `data`; ValueError naming the field when it is not one (a hand-edited or old file)."""
        if not isinstance(data, dict):
            raise ValueError("the pending decision is not an object")
        texts = ("request_id", "run_id", "reply_content")
        for name in texts:
            if not isinstance(data.get(name, ""), str):
                raise ValueError(f"the pending decision's {name} is not text")
        if data.get("kind") not in {kind.value for kind in DecisionKind}:
            raise ValueError("the pending decision's kind is unknown")
        if not isinstance(data.get("payload"), dict) or not isinstance(data.get("reply_tool_calls", []), list):
            raise ValueError("the pending decision's payload or tool calls are malformed")
        numbers = ("step_number", "steps_done", "max_steps", "reply_input_tokens", "reply_output_tokens")
        if not all(isinstance(data.get(name, 0), int) and data.get(name, 0) >= 0 for name in numbers):
            raise ValueError("the pending decision's step numbers or token counts are malformed")
        taken, shown = _seconds(data, "taken_at", "taken time"), _seconds(data, "shown_at", "shown time")
        model_s = _seconds(data, "reply_model_s", "model time")
        interval = data.get("planning_interval")
        if interval is not None and (not isinstance(interval, int) or interval < 1):
            raise ValueError("the pending decision's planning interval is malformed")
        policy, tools = data.get("policy"), data.get("tools")
        if policy is not None and not (isinstance(policy, dict) and policy.get("tool_calls", "none") in TOOL_CALLS
                                       and _names(policy.get("tools_needing_approval", []))):
            raise ValueError("the pending decision's approval policy is malformed")
        if tools is not None and not _names(tools):
            raise ValueError("the pending decision's tools are malformed")
        earlier = data.get("earlier", [])
        if not isinstance(earlier, list) or not all(
                isinstance(r, dict) and isinstance(r.get("proposed", {}), dict)
                and r.get("outcome") in {o.value for o in Outcome} for r in earlier):
            raise ValueError("the pending decision's earlier decisions are malformed")
        return cls(request_id=data["request_id"], kind=data["kind"], payload=data["payload"], run_id=data["run_id"],
                   step_number=data["step_number"], reply_content=data.get("reply_content", ""),
                   reply_tool_calls=list(data.get("reply_tool_calls", [])),
                   reply_input_tokens=data.get("reply_input_tokens", 0),
                   reply_output_tokens=data.get("reply_output_tokens", 0), reply_model_s=model_s,
                   steps_done=data.get("steps_done", 0),
                   max_steps=max(1, data.get("max_steps", 20)), planning_interval=interval,
                   in_code=bool(data.get("in_code", False)), asked_at=float(data.get("asked_at", 0.0) or 0.0),
                   policy=policy, tools=list(tools) if tools is not None else None,
                   earlier=[dict(record) for record in earlier], taken_at=taken, shown_at=shown)


TOOL_CALLS = ("none", "flagged", "all")


def policy_record(policy: ApprovalPolicy | None) -> dict[str, Any] | None:
    """A run's own approval policy as the pending record keeps it (what it pauses for; no timeouts: a paused
    run waits for no clock)."""
    if policy is None:
        return None
    return {"review_plans": policy.review_plans, "approve_code": policy.approve_code, "tool_calls": policy.tool_calls,
            "tools_needing_approval": sorted(policy.tools_needing_approval)}


def _decision_of(record: dict[str, Any]) -> Decision:
    """The decision a step's record says was made (agents/decisions/broker.py writes the records)."""
    outcome, detail = Outcome(record["outcome"]), str(record.get("detail") or "")
    if outcome is Outcome.EDIT:
        return Decision.edit(record.get("edited"))
    if outcome is Outcome.REJECT:
        return Decision.reject(detail)
    if outcome is Outcome.ANSWER:
        return Decision.reply(detail)
    return Decision.approve()


def _seconds(data: dict[str, Any], name: str, what: str) -> float:
    """The time `data[name]` (0.0 when absent); ValueError naming `what` for anything but a finite, non-negative
    number (`_time_or_zero` forgives what this refuses: an earlier decision's record is the step's, not this)."""
    value = data.get(name, 0.0)
    if _time_or_zero(value) != value:
        raise ValueError(f"the pending decision's {what} is malformed")
    return float(value)


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(name, str) for name in value)


class RunPaused(AgentInterrupted):
    """The run ended at a decision request (pause mode): everything between the request and the step's end
    unwinds as on a stop, and the step runner records the pending decision instead of the step."""

    def __init__(self, request: DecisionRequest) -> None:
        super().__init__(f"The run is waiting for a {request.kind.value} decision.")
        self.request = request
