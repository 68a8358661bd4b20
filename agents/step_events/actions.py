"""What a step did (its plan or code, printed output, files, error), and a whole step's events in the order the
loop streams them.

Part of the one mapping from memory steps to events (agents/step_events/__init__.py says how it is used).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from agents.events import (
    ArtifactCreated,
    ArtifactKind,
    CodeProposed,
    Event,
    ExecutionLog,
    PlanProposed,
    StepError,
)
from agents.memory.steps import ActionStep, PlanningStep
from agents.step_events.decisions import decision_events, proposed
from agents.step_events.frames import Fields, model_output, observation, step_finished, step_started
from agents.step_events.tool_calls import ToolCallRecord, call_events, legacy_calls

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp"})


# ----- what a step proposed and what came of it -----------------------------------------------------------
def plan_proposed(step: PlanningStep, fields: Fields) -> PlanProposed:
    return PlanProposed(**fields, plan=str(proposed(step, "plan", "plan", step.plan)), is_update=step.is_update)


def code_proposed(step: ActionStep, fields: Fields) -> CodeProposed:
    return CodeProposed(**fields, code=str(proposed(step, "code", "code", step.code or "")))


def execution_log(text: str, fields: Fields) -> ExecutionLog:
    return ExecutionLog(**fields, text=text)


def artifact_kind(relative_path: str) -> ArtifactKind:
    return "image" if Path(relative_path).suffix.lower() in IMAGE_SUFFIXES else "file"


def artifact_created(step: ActionStep, index: int, workdir: Path, fields: Fields) -> ArtifactCreated:
    """The step's `index`-th file (created or changed), at its place in `workdir`."""
    relative = step.artifacts[index]
    size = step.artifact_sizes[index] if index < len(step.artifact_sizes) else 0
    return ArtifactCreated(**fields, path=str(Path(workdir) / relative), relative_path=relative,
                           artifact_kind=artifact_kind(relative), size_bytes=int(size))


def step_error(step: ActionStep, fields: Fields) -> StepError | None:
    """The error the person was shown, if any (a step can fail without one: a stop, a tool call's error)."""
    if not step.error_type:
        return None
    return StepError(**fields, error_type=step.error_type, message=step.error_message or step.error or "")


# ----- a whole step, as the loop streamed it ----------------------------------------------------------------
def action_events(step: ActionStep, fields: Fields, workdir: Path, after_start: Sequence[Event] = (),
                  has_file: Callable[[str], bool] | None = None) -> list[Event]:
    """An action step's events in the order the loop streams them (`after_start`: a compaction made as the
    step started). `has_file(relative)`: whether the workspace still holds that regular file (an app whose
    sandbox keeps the workspace elsewhere asks it; by default `workdir` is looked at)."""
    events: list[Event] = [step_started(step, fields), *after_start]
    if step.model_duration_s or step.model_output:  # the model answered (a failed call records no duration)
        events.append(model_output(step, fields))
    decisions = list(step.decisions)
    if step.code is not None:
        events.append(code_proposed(step, fields))
        while decisions and isinstance(decisions[0], dict) and decisions[0].get("kind") == "code":
            events += decision_events(decisions.pop(0), fields)
    calls = [c for c in map(ToolCallRecord.from_dict, step.call_records) if c is not None]
    if not step.call_records and step.code is None:
        events += legacy_calls(step, fields)
    printed = 0
    for call in calls:
        offset = min(max(call.log_offset, printed), len(step.logs))
        if offset > printed:
            events.append(execution_log(step.logs[printed:offset], fields))
            printed = offset
        events += call_events(call, decisions, fields)
    if len(step.logs) > printed:
        events.append(execution_log(step.logs[printed:], fields))
    for record in decisions:  # any left (a record without its call): shown, not lost
        events += decision_events(record, fields)
    for index, relative in enumerate(step.artifacts):
        path = Path(workdir) / relative
        try:  # a file deleted since, or a path that leads out of the workspace, is not shown
            shown = has_file(relative) if has_file is not None else \
                path.is_file() and path.resolve().is_relative_to(Path(workdir).resolve())
        except OSError:
            shown = False
        if shown:
            events.append(artifact_created(step, index, workdir, fields))
    error = step_error(step, fields)
    if error is not None:
        events.append(error)
    seen = observation(step, fields)
    if seen is not None:
        events.append(seen)
    events.append(step_finished(step, fields))
    return events


def planning_events(step: PlanningStep, fields: Fields, after_start: Sequence[Event] = ()) -> list[Event]:
    events: list[Event] = [step_started(step, fields), *after_start, model_output(step, fields),
                           plan_proposed(step, fields)]
    for record in step.decisions:
        events += decision_events(record, fields)
    events.append(step_finished(step, fields))
    return events
