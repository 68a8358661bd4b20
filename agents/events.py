"""Typed events emitted by the agent loop: the one stream the UI, the console and the tests consume.

Every event carries the run id, the step number and the id of its parent: the tool call that started a
managed agent's run (None at top level), so consumers can nest a sub-agent's events under that call.
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from agents.models.base import TokenUsage

# The fields below that take one of a fixed set of values. The decision kinds and outcomes are also
# `agents.decisions.DecisionKind` / `Outcome` members' values, and a run's end state `agents.loop.RunState`'s.
StepType = Literal["action", "planning", "final"]  # "final": the best-guess answer asked for after max steps
RequestKind = Literal["plan", "code", "tool_call", "question"]
DecisionOutcome = Literal["approve", "edit", "reject", "answer"]
ArtifactKind = Literal["image", "file"]
SummarySource = Literal["model", "fallback"]  # "fallback": the summary call failed or came back empty
RunEndState = Literal["success", "max_steps", "interrupted", "error", "paused"]
#: How far the app stands behind an answer it checked (agents/answer_checks/): "unchecked" passed every check the
#: app could make but is still a small model's answer no one verified; "agreed": it also passed and a second,
#: independent attempt gave the same value (still a small model's, but two tries agree); "unsure": a check failed.
CheckVerdict = Literal["unchecked", "agreed", "unsure"]


def new_id() -> str:
    """A short unique id for runs, calls and decision requests."""
    return uuid.uuid4().hex[:12]


@dataclass(kw_only=True)
class Event:
    run_id: str
    step: int
    parent_id: str | None = None
    timestamp: float = field(default_factory=time.time)

    @property
    def kind(self) -> str:
        """The event's type name in snake_case, handy for logs and JSON."""
        name = type(self).__name__
        return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


@dataclass(kw_only=True)
class RunStarted(Event):
    task: str
    agent_name: str
    model_id: str
    max_steps: int


@dataclass(kw_only=True)
class StepStarted(Event):
    step_type: StepType


@dataclass(kw_only=True)
class ModelTextDelta(Event):
    text: str


@dataclass(kw_only=True)
class ModelOutput(Event):
    """The model's whole reply for a step, once it has finished streaming."""
    text: str
    token_usage: TokenUsage
    duration_s: float


@dataclass(kw_only=True)
class ModelRetrying(Event):
    """The model call failed for a passing reason (rate limit, dropped stream...) and is retried after
    `wait_s` seconds. With `discarded_text`, the reply streamed so far in this step is void: drop it."""
    reason: str
    attempt: int
    max_retries: int
    wait_s: float
    retry_after_s: float | None = None
    discarded_text: bool = False


@dataclass(kw_only=True)
class PlanProposed(Event):
    plan: str
    is_update: bool


@dataclass(kw_only=True)
class CodeProposed(Event):
    code: str


@dataclass(kw_only=True)
class ToolCallProposed(Event):
    call_id: str
    tool_name: str
    arguments: dict[str, Any]


@dataclass(kw_only=True)
class ToolCallResult(Event):
    """A call's end. With `rejected`, a person rejected the call (it never ran) and `output` is their reason:
    a person's decision, not a failure (`is_error` is False)."""
    call_id: str
    tool_name: str
    output: str
    is_error: bool = False
    rejected: bool = False


@dataclass(kw_only=True)
class DecisionRequested(Event):
    """The run is paused until someone answers the request (see agents.decisions)."""
    request_id: str
    request_kind: RequestKind
    payload: dict[str, Any]


@dataclass(kw_only=True)
class DecisionMade(Event):
    """A person's answer to a DecisionRequested. With outcome "edit", `edited` is what runs instead of the
    proposal: the plan or code (str) or the tool call's arguments (dict)."""
    request_id: str
    request_kind: RequestKind
    outcome: DecisionOutcome
    detail: str = ""  # the reason of a rejection, the answer to a question
    edited: Any = None
    #: How long the person took, in seconds: from when a page first showed the request (else from the request)
    #: to the decision, recorded with it (agents/decisions/pending.py `waited_s`). None: a chat saved before it was.
    waited_s: float | None = None


@dataclass(kw_only=True)
class ExecutionLog(Event):
    text: str


@dataclass(kw_only=True)
class ArtifactCreated(Event):
    path: str          # absolute path on the server
    relative_path: str  # path inside the workspace
    artifact_kind: ArtifactKind
    size_bytes: int = 0


@dataclass(kw_only=True)
class SandboxRun(Event):
    """A step's code ran in the sandbox (streaming only: a replay has none). `state_lost`: the worker was
    restarted and its variables are gone; `untrusted`: the worker broke the protocol. Traces and metrics read it."""
    backend: str
    duration_s: float
    state_lost: bool = False
    untrusted: bool = False
    error_type: str | None = None


@dataclass(kw_only=True)
class Observation(Event):
    text: str
    #: The code's last bare expression, as a notebook shows it (agents/shown_value.py `ShownValue.as_dict`).
    value: dict[str, Any] | None = None


@dataclass(kw_only=True)
class StepError(Event):
    error_type: str
    message: str


@dataclass(kw_only=True)
class InjectionFlagged(Event):
    """Text from outside the agent tried to give it instructions."""
    source: str
    excerpt: str


@dataclass(kw_only=True)
class MemoryCompacted(Event):
    tokens_before: int
    tokens_after: int
    steps_folded: int  # steps taken out of the prompt by this compaction (they stay in memory.steps)
    budget: int = 0
    summary_source: SummarySource = "model"


@dataclass(kw_only=True)
class StepFinished(Event):
    step_type: StepType
    duration_s: float  # a code step's model call plus its code's run (agents/step_events/frames.py `step_time`)
    token_usage: TokenUsage


@dataclass(frozen=True)
class AnswerCheck:
    """What the app checked of an answer before showing it (agents/answer_checks/), in words the person reads."""
    verdict: CheckVerdict
    passed: tuple[str, ...] = ()  # the checks the answer passed
    problems: tuple[str, ...] = ()  # why the app cannot stand behind it (empty when "unchecked")
    advice: str = ""  # how to get a better answer (a capable model), shown with the problems

    def as_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "passed": list(self.passed), "problems": list(self.problems),
                "advice": self.advice}

    @classmethod
    def from_dict(cls, data: Any) -> AnswerCheck | None:
        """The check a saved answer step kept; None for anything that is not one (an older or altered chat)."""
        if not isinstance(data, dict) or data.get("verdict") not in ("unchecked", "agreed", "unsure"):
            return None

        def texts(key: str) -> tuple[str, ...]:
            value = data.get(key)
            return tuple(str(v) for v in value) if isinstance(value, list) else ()

        return cls(verdict=data["verdict"], passed=texts("passed"), problems=texts("problems"),
                   advice=str(data.get("advice") or ""))


@dataclass(kw_only=True)
class SecondAttemptStarted(Event):
    """The app asks the model again, afresh, to confirm an answer the other checks could not (a plain number or
    name from a small model): the chat shows that it is waiting for it (agents/loop/second_attempt.py)."""
    answer: Any  # the run's answer, which the second attempt is compared with


@dataclass(kw_only=True)
class SecondAttemptFinished(Event):
    """What the second, independent attempt gave: its value, and whether it agrees with the run's answer."""
    answered: bool
    value: Any = None
    agrees: bool = False
    error: str = ""  # why it gave no answer (an error type, "no code", "stopped")
    code: str = ""  # the code it ran (empty when the model wrote none)
    model_calls: int = 0
    duration_s: float = 0.0


@dataclass(kw_only=True)
class FinalAnswer(Event):
    value: Any
    #: The app's checks of the answer, for models whose answers are checked (the embedded one); None otherwise.
    check: AnswerCheck | None = None
    #: An answer that is a data frame, as agents/shown_value.py's data (`ShownValue.as_dict`): shown as its table.
    table: dict[str, Any] | None = None


@dataclass(kw_only=True)
class RunFinished(Event):
    state: RunEndState
    output: Any
    duration_s: float
    token_usage: TokenUsage
    steps: int
    error: str | None = None


def event_types() -> list[type[Event]]:
    """Every event class defined here: renderers check against it that they handle each one."""
    return [cls for cls in globals().values()
            if isinstance(cls, type) and issubclass(cls, Event) and cls is not Event and cls.__module__ == __name__]


E = TypeVar("E", bound=Event)
R = TypeVar("R")


def handles(event_type: type[E], handler: Callable[[R, E], None]) -> tuple[type[Event], Callable[[R, Any], None]]:
    """One entry of a renderer's by-class dispatch table: the type checker refuses a handler that takes another
    event type (agents/console.py and ui/chat/render.py build theirs with it)."""
    return event_type, handler
