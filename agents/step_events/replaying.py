"""A saved memory replayed as the loop streamed it, and a live stream cut to what such a replay gives back.

Part of the one mapping from memory steps to events (agents/step_events/__init__.py says what is replayed and
what is not).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agents.events import (
    DecisionMade,
    DecisionRequested,
    Event,
    ExecutionLog,
    ModelRetrying,
    ModelTextDelta,
    RunFinished,
    SandboxRun,
    StepStarted,
)
from agents.memory.steps import ActionStep, FinalAnswerStep, MemoryStep, PlanningStep, SummaryStep, TaskStep
from agents.step_events import frames
from agents.step_events.actions import action_events, planning_events
from agents.step_events.frames import Fields

#: Events that exist only while a run streams (see agents/step_events/__init__.py).
STREAMING_ONLY: tuple[type[Event], ...] = (ModelTextDelta, ModelRetrying, SandboxRun)
#: A saved run without a recorded id (older memories) gets `restored-<its index>`.
RESTORED_RUN = "restored"


@dataclass
class _Run:
    """The run being replayed: its task step, its steps so far, a compaction waiting for its step to start."""
    task: TaskStep
    run_id: str
    steps: list[MemoryStep] = field(default_factory=list)
    compacted: list[SummaryStep] = field(default_factory=list)
    ended: bool = False

    def fields(self, step: int) -> Fields:
        return {"run_id": self.run_id, "step": step, "parent_id": None}

    def end_step(self) -> int:
        if self.task.state:
            return self.task.end_step
        numbers = [s.step_number for s in self.steps if isinstance(s, (PlanningStep, ActionStep))]
        return max(numbers, default=self.task.steps_before)

    def compactions_at(self, step: int) -> list[Event]:
        due = [s for s in self.compacted if s.step_number == step]
        self.compacted = [s for s in self.compacted if s.step_number != step]
        return [frames.memory_compacted(s, self.fields(step)) for s in due]

    def end(self, final: FinalAnswerStep | None) -> list[Event]:
        """The events that close the run: a best guess's step, the answer, RunFinished (when it ended)."""
        self.ended = True
        fields = self.fields(self.end_step())
        guess = final is not None and self.task.state == "max_steps"
        during_guess = self.compactions_at(fields["step"]) if guess else []
        # A compaction whose step left no record (a planning call stopped) is shown where it came in the memory.
        events: list[Event] = [frames.memory_compacted(s, self.fields(s.step_number)) for s in self.compacted]
        self.compacted = []
        if final is not None:
            if guess:
                events += [frames.guess_started(final, fields), *during_guess, frames.guess_output(final, fields),
                           frames.guess_finished(final, fields)]
            events.append(frames.final_answer(final, fields))
        if final is not None or self.task.state:
            task = self.task
            if not task.state:  # saved before runs recorded their end: what the chat showed then
                duration = sum(s.timing.duration_s for s in self.steps if isinstance(s, ActionStep))
                task = TaskStep(task=task.task, run_id=task.run_id, state="success", duration_s=duration)
            events.append(frames.run_finished(task, self.steps, final, fields))
        return events


def replay(steps: Sequence[MemoryStep], workdir: Path,
           has_file: Callable[[str], bool] | None = None) -> Iterator[tuple[MemoryStep | None, list[Event]]]:
    """(step, its events) for each step of a saved memory, in order, as the loop streamed them; `workdir` is
    where the step's files are (`has_file`: see `action_events`). A run that ended without an answer (stopped,
    failed) is closed by a `(None, [RunFinished])` before the next run's task. History and system steps have no
    events."""
    run: _Run | None = None
    for index, step in enumerate(steps):
        if isinstance(step, TaskStep):
            if run is not None and not run.ended:
                yield None, run.end(None)
            run = _Run(task=step, run_id=step.run_id or f"{RESTORED_RUN}-{index}")
            yield step, [frames.run_started(step, run.fields(step.steps_before))]
            continue
        if run is None:  # steps before any task (a hand-made memory): replayed under a run of their own
            run = _Run(task=TaskStep(), run_id=f"{RESTORED_RUN}-{index}")
        if isinstance(step, (PlanningStep, ActionStep)):
            run.steps.append(step)
            fields = {**run.fields(step.step_number),
                      "run_id": getattr(step, "run_id", "") or run.run_id}
            after_start = run.compactions_at(step.step_number)
            if isinstance(step, PlanningStep):
                yield step, planning_events(step, fields, after_start)
            else:
                yield step, action_events(step, fields, workdir, after_start, has_file)
        elif isinstance(step, SummaryStep):
            run.steps.append(step)
            if step.step_number:  # shown when its step starts (it was made then)
                run.compacted.append(step)
                yield step, []
            else:  # saved before compactions recorded their step
                yield step, [frames.memory_compacted(step, run.fields(0))]
        elif isinstance(step, FinalAnswerStep):
            yield step, run.end(step)
        else:
            yield step, []
    if run is not None and not run.ended:
        yield None, run.end(None)


# ----- comparing a live stream with a replay ------------------------------------------------------------
def replayable(events: Iterable[Event]) -> list[Event]:
    """The part of a live stream that a replay gives back: streaming-only events and managed agents' events
    dropped, neighbouring ExecutionLog pieces of a step joined. A run paused at a decision (pause mode,
    agents/decisions/pending.py) left its paused step unrecorded and the resume acted it again: that first go is
    dropped with the paused RunFinished, its request kept for where the resumed step's answer comes."""
    kept: list[Event] = []
    asked: dict[str, Event] = {}  # the requests of paused steps, by id
    for event in events:
        if isinstance(event, STREAMING_ONLY) or event.parent_id is not None:
            continue
        if isinstance(event, RunFinished) and event.state == "paused":
            start = max((i for i, e in enumerate(kept) if isinstance(e, StepStarted)
                         and (e.run_id, e.step) == (event.run_id, event.step)), default=len(kept))
            asked.update((e.request_id, e) for e in kept[start:] if isinstance(e, DecisionRequested))
            del kept[start:]
            continue
        if isinstance(event, DecisionMade) and event.request_id in asked:
            kept.append(asked.pop(event.request_id))
        last = kept[-1] if kept else None
        if isinstance(event, ExecutionLog) and isinstance(last, ExecutionLog) \
                and (last.run_id, last.step) == (event.run_id, event.step):
            kept[-1] = ExecutionLog(run_id=last.run_id, step=last.step, parent_id=None, timestamp=last.timestamp,
                                    text=last.text + event.text)
            continue
        if isinstance(event, ExecutionLog) and not event.text:
            continue
        kept.append(event)
    return kept
