"""Memory steps: what happened in a run, one dataclass per kind of step.

Each step renders its messages for the model once (`messages`, filled when the step is recorded),
so the prompt of step N is built by appending, never by re-rendering steps 1..N-1.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from agents.models.base import Message, TokenUsage, ToolCall


@dataclass
class MemoryStep:
    step_type: str = field(init=False, default="step")
    #: The messages this step contributes to the next prompts (rendered once, when recorded).
    messages: list[Message] = field(default_factory=list, repr=False)


@dataclass
class SystemPromptStep(MemoryStep):
    system_prompt: str = ""

    def __post_init__(self) -> None:
        self.step_type = "system_prompt"


@dataclass
class HistoryStep(MemoryStep):
    """Earlier conversation handed in by the caller (`run(task, history=[...])`)."""
    history: list[Message] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.step_type = "history"


@dataclass
class TaskStep(MemoryStep):
    """A run's task, and what its start and end events said (agents/step_events/ replays them)."""
    task: str = ""
    run_id: str = ""
    agent_name: str = ""
    model_id: str = ""
    max_steps: int = 0
    steps_before: int = 0  # the agent's step count when the run started (numbering goes on across runs)
    #: Filled when the run ends: its RunState value ("" if it never ended, e.g. the server stopped), the step
    #: count then, its wall time and its error.
    state: str = ""
    end_step: int = 0
    duration_s: float = 0.0
    error: str | None = None

    def __post_init__(self) -> None:
        self.step_type = "task"


@dataclass
class Timing:
    start_time: float = 0.0
    end_time: float = 0.0

    @property
    def duration_s(self) -> float:
        return max(0.0, self.end_time - self.start_time)


@dataclass
class PlanningStep(MemoryStep):
    step_number: int = 0
    plan: str = ""
    model_output: str = ""
    is_update: bool = False
    edited_by_user: bool = False
    decisions: list[dict[str, Any]] = field(default_factory=list)
    token_usage: TokenUsage = field(default_factory=TokenUsage)
    timing: Timing = field(default_factory=Timing)
    model_duration_s: float = 0.0

    def __post_init__(self) -> None:
        self.step_type = "planning"


class PromptSnapshot(Sequence[Message]):
    """The first `length` messages of an append-only prompt list: recorded in O(1) per step.

    AgentMemory only ever appends to its prompt list, or swaps in a new list (reset, compaction), so a
    reference and a length pin down exactly what the model was sent.
    """

    __slots__ = ("_source", "_length")

    def __init__(self, source: list[Message], length: int | None = None) -> None:
        self._source = source
        self._length = len(source) if length is None else length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return self._source[: self._length][index]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("prompt snapshot index out of range")
        return self._source[index]

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, Sequence) else NotImplemented

    def __repr__(self) -> str:
        return f"PromptSnapshot({self._length} messages)"


@dataclass
class ActionStep(MemoryStep):
    step_number: int = 0
    run_id: str = ""
    model_input_messages: Sequence[Message] = field(default_factory=list, repr=False)
    model_output: str = ""
    code: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    observations: str = ""
    logs: str = ""
    #: What the model is told went wrong; `error_type` and `error_message` are what the person was shown
    #: (a StepError event): set only when one was, `error_message` "" when it is `error` itself.
    error: str | None = None
    error_type: str | None = None
    error_message: str = ""
    #: Stop ended the step while it acted (its code may not have run to its end): a reopened chat does not
    #: re-run it, and says why (agents/loop/restore.py `skip_reason`).
    stopped: bool = False
    artifacts: list[str] = field(default_factory=list)  # workspace-relative paths
    artifact_sizes: list[int] = field(default_factory=list)  # bytes, by position in `artifacts`
    #: Every tool call of the step as it went (agents/step_events/: ToolCallRecord fields), failed ones too.
    call_records: list[dict[str, Any]] = field(default_factory=list)
    native_tool_calls: bool = False  # the model called tools natively (not as JSON in its text)
    action_output: Any = None
    #: The code's last bare expression, as a notebook shows it (agents/shown_value.py `ShownValue.as_dict`).
    last_value: dict[str, Any] | None = None
    is_final_answer: bool = False
    #: A final answer that is a data frame, as agents/shown_value.py's data (`ShownValue.as_dict`): its table.
    answer_value: dict[str, Any] | None = None
    token_usage: TokenUsage = field(default_factory=TokenUsage)
    timing: Timing = field(default_factory=Timing)
    model_duration_s: float = 0.0
    execution_duration_s: float = 0.0
    #: The person's decisions in this step (agents.decisions.DecisionRecord as dicts), edits with both versions.
    decisions: list[dict[str, Any]] = field(default_factory=list)
    #: A person edited the code or a tool call's arguments before it ran: `code`/`tool_calls` hold what ran,
    #: `model_output` what the model wrote.
    edited_by_user: bool = False

    def __post_init__(self) -> None:
        self.step_type = "action"


@dataclass
class FinalAnswerStep(MemoryStep):
    output: Any = None
    run_id: str = ""
    #: After max steps, `output` is the model's best guess from one last call: its timing and token usage.
    guess_timing: Timing = field(default_factory=Timing)
    guess_usage: TokenUsage = field(default_factory=TokenUsage)
    #: What the app checked of the answer before showing it (agents.events.AnswerCheck.as_dict), if it did.
    check: dict[str, Any] | None = None
    #: An answer that is a data frame, as agents/shown_value.py's data (`ShownValue.as_dict`): the chat shows it as
    #: Gradio's table (ui/chat/value_table.py); None for any other answer.
    answer_value: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.step_type = "final_answer"


@dataclass
class SummaryStep(MemoryStep):
    """Older steps folded into a summary by compaction; the folded steps stay in `AgentMemory.steps`."""
    summary: str = ""
    folded_steps: int = 0
    #: Indices in `AgentMemory.steps` of the earlier steps kept verbatim in the prompt (see compaction.py).
    kept_steps: list[int] = field(default_factory=list)
    source: str = "model"  # "model" | "fallback"
    tokens_before: int = 0
    tokens_after: int = 0
    token_usage: TokenUsage = field(default_factory=TokenUsage)  # the summary call's usage (not an action step)
    run_id: str = ""
    step_number: int = 0  # the step that was starting when the memory was compacted
    budget: int = 0
    newly_folded: int = 0  # steps this compaction took out of the prompt (`folded_steps` counts all so far)

    def __post_init__(self) -> None:
        self.step_type = "summary"


STEP_TYPES: dict[str, type[MemoryStep]] = {
    "system_prompt": SystemPromptStep, "history": HistoryStep, "task": TaskStep, "planning": PlanningStep,
    "action": ActionStep, "final_answer": FinalAnswerStep, "summary": SummaryStep,
}
