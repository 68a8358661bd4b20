"""The result of a run, for callers that want more than the final answer."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from agents.events import RunEndState
from agents.memory.steps import MemoryStep
from agents.models.base import TokenUsage


class RunState(StrEnum):
    _value_: RunEndState  # the values are `RunFinished.state`'s
    SUCCESS = "success"
    MAX_STEPS = "max_steps"
    INTERRUPTED = "interrupted"
    ERROR = "error"
    PAUSED = "paused"  # ended at a decision request, pause mode: `agent.resume(decision)` goes on


@dataclass
class RunResult:
    output: Any
    state: RunState
    run_id: str
    steps: list[MemoryStep] = field(default_factory=list)
    token_usage: TokenUsage = field(default_factory=TokenUsage)
    duration_s: float = 0.0
    error: str | None = None
    #: The exception that ended a run in error (`run()` raises it again unless `return_result=True`).
    exception: BaseException | None = field(default=None, repr=False, compare=False)

    @property
    def max_steps_reached(self) -> bool:
        return self.state is RunState.MAX_STEPS
