"""StepAgent: the narrow view of an agent that a run's step mechanics (agents/loop/step_runner.py) work through:
its settings, its memory, and how it acts. MultiStepAgent (agents/loop/base.py) is the one that fits it; the view
keeps the runner from reaching into the rest of the agent.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from agents.errors import AgentDeckError
from agents.loop.callbacks import StepCallbacks
from agents.loop.context import RunContext
from agents.memory import ActionStep, AgentMemory
from agents.memory.compaction import Compactor
from agents.models.base import Message, Model, ModelReply

FinalAnswerCheck = Callable[[Any, AgentMemory], bool]


class StepAgent(Protocol):
    """What the step mechanics need of an agent: its settings, its memory, and how it acts (MultiStepAgent)."""

    name: str | None
    model: Model
    memory: AgentMemory
    prompt_templates: dict[str, Any]
    compactor: Compactor
    step_callbacks: StepCallbacks
    final_answer_checks: list[FinalAnswerCheck]
    stop_sequences: list[str]
    max_tokens_per_run: int | None

    def prompt_variables(self, run: RunContext | None = None) -> dict[str, Any]: ...

    def native_tool_schemas(self, run: RunContext | None = None) -> list[dict[str, Any]] | None: ...

    def prompt_for_step(self, run: RunContext) -> list[Message]: ...

    def images_in_prompt(self, messages: list[Message]) -> list[Message]: ...

    def step_options(self, options: dict[str, Any]) -> dict[str, Any]: ...

    def act(self, step: ActionStep, reply: ModelReply, run: RunContext) -> None: ...

    def run_refusal(self) -> AgentDeckError | None: ...

    def check_answer(self, value: Any, run: RunContext | None = None) -> dict[str, Any] | None: ...

    def answer_problem(self, value: Any) -> str | None: ...
