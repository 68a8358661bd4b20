"""The frame of a run and of a step: where they start and end, what the model said, what it is sent next.

Part of the one mapping from memory steps to events (agents/step_events/__init__.py says how it is used).
"""
from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any, TypeGuard, get_args

from agents.events import (
    AnswerCheck,
    FinalAnswer,
    MemoryCompacted,
    ModelOutput,
    Observation,
    RunEndState,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    StepType,
)
from agents.memory.steps import ActionStep, FinalAnswerStep, MemoryStep, PlanningStep, SummaryStep, TaskStep
from agents.models.base import TokenUsage, message_text

Fields = dict[str, Any]  # run_id, step, parent_id: what every event of a step carries


def recorded_time(moment: float) -> float:
    """A recorded time for an event's timestamp (older memories have none: now)."""
    return moment if moment else time.time()


# ----- runs ---------------------------------------------------------------------------------------------
def run_started(task: TaskStep, fields: Fields) -> RunStarted:
    return RunStarted(**fields, task=task.task, agent_name=task.agent_name, model_id=task.model_id,
                      max_steps=task.max_steps)


def run_usage(steps: Iterable[MemoryStep]) -> TokenUsage:
    """The model tokens a run's steps used: its plans, actions and memory summaries."""
    return sum((s.token_usage for s in steps if isinstance(s, (PlanningStep, ActionStep, SummaryStep))), TokenUsage())


def final_answer(final: FinalAnswerStep, fields: Fields) -> FinalAnswer:
    table = final.answer_value if isinstance(final.answer_value, dict) else None
    return FinalAnswer(**fields, value=final.output, check=AnswerCheck.from_dict(final.check), table=table)


def run_finished(task: TaskStep, steps: Sequence[MemoryStep], final: FinalAnswerStep | None,
                 fields: Fields) -> RunFinished:
    """The end of the run of `task`, whose steps (after it) are `steps`; `final` its answer, if it gave one."""
    state = task.state if _is_end_state(task.state) else "success"  # none (or one the loop never writes)
    return RunFinished(**fields, state=state, output=final.output if final is not None else None,
                       duration_s=task.duration_s, token_usage=run_usage(steps),
                       steps=sum(1 for s in steps if isinstance(s, ActionStep)), error=task.error)


# A value read from a saved memory is a string; this says whether the event's Literal field can take it.
def _is_end_state(value: object) -> TypeGuard[RunEndState]:
    return value in get_args(RunEndState)


# ----- a step's frame -----------------------------------------------------------------------------------
def step_started(step: PlanningStep | ActionStep, fields: Fields) -> StepStarted:
    return StepStarted(**fields, step_type=_step_type(step), timestamp=recorded_time(step.timing.start_time))


def model_output(step: PlanningStep | ActionStep, fields: Fields) -> ModelOutput:
    return ModelOutput(**fields, text=step.model_output, token_usage=step.token_usage,
                       duration_s=step.model_duration_s)


def observation(step: ActionStep, fields: Fields) -> Observation | None:
    """What the model is sent after the step: the last message the step added to the prompt."""
    if not step.messages:
        return None
    value = step.last_value if isinstance(step, ActionStep) and isinstance(step.last_value, dict) else None
    return Observation(**fields, text=message_text(step.messages[-1]), value=value)


def step_finished(step: PlanningStep | ActionStep, fields: Fields) -> StepFinished:
    return StepFinished(**fields, step_type=_step_type(step), duration_s=step_time(step),
                        token_usage=step.token_usage, timestamp=recorded_time(step.timing.end_time))


def step_time(step: PlanningStep | ActionStep) -> float:
    """A step's time as shown: for a step whose code ran, its model call plus its code's run, not what its wall
    time also holds (a sandbox's cold start, a wait for a person's decision, which shows its own time); for any
    other step, its wall time."""
    if isinstance(step, ActionStep) and step.code is not None and step.execution_duration_s > 0:
        return step.model_duration_s + step.execution_duration_s
    return step.timing.duration_s


def _step_type(step: PlanningStep | ActionStep) -> StepType:
    return "planning" if isinstance(step, PlanningStep) else "action"


# The best guess asked for after the last step (state "max_steps"): a step of its own in the chat.
def guess_started(final: FinalAnswerStep, fields: Fields) -> StepStarted:
    return StepStarted(**fields, step_type="final", timestamp=recorded_time(final.guess_timing.start_time))


def guess_output(final: FinalAnswerStep, fields: Fields) -> ModelOutput:
    return ModelOutput(**fields, text=str(final.output or ""), token_usage=final.guess_usage,
                       duration_s=final.guess_timing.duration_s)


def guess_finished(final: FinalAnswerStep, fields: Fields) -> StepFinished:
    return StepFinished(**fields, step_type="final", duration_s=final.guess_timing.duration_s,
                        token_usage=final.guess_usage, timestamp=recorded_time(final.guess_timing.end_time))


# ----- a compaction of the memory (shown when the step it was made for starts) -----------------------------
def memory_compacted(summary: SummaryStep, fields: Fields) -> MemoryCompacted:
    return MemoryCompacted(**fields, tokens_before=summary.tokens_before, tokens_after=summary.tokens_after,
                           steps_folded=summary.newly_folded or summary.folded_steps, budget=summary.budget,
                           summary_source="fallback" if summary.source == "fallback" else "model")
