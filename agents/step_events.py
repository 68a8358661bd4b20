"""One mapping from memory steps to events: what a run streams, and what a reopened chat replays.

A step's record (agents/memory/steps.py) holds everything the person was shown of it. The functions here turn
that record into the typed events of agents/events.py. The loop calls them while a step happens, each at the
moment its part of the record is written (the code before it runs, the error when it fails), and streams what
they return; `replay` calls the same functions, in the same order, over a finished memory. So a live chat and a
reopened one are built from the same events by the same renderer, and a change to how a step shows is made
here, once. tests/ui/test_replay_round_trip.py runs an app session, saves and reopens it, and checks that the
events and the chat agree.

Replayed (`replay` gives them back from a saved memory):
  RunStarted, StepStarted, ModelOutput, PlanProposed, CodeProposed, DecisionRequested, DecisionMade,
  ToolCallProposed, InjectionFlagged (a tool's output), ToolCallResult, ExecutionLog, ArtifactCreated,
  StepError, Observation, MemoryCompacted, StepFinished, FinalAnswer, RunFinished.
Streaming only (`STREAMING_ONLY`; what they said is in the events above, or it left nothing to show):
  ModelTextDelta is the reply while it arrives: ModelOutput carries all of it.
  ModelRetrying is a wait for the provider: once the reply came, nothing of it remains.
  A step's printed output streams as many ExecutionLog pieces; it is replayed as one piece per stretch between
  two tool calls (`replayable` joins neighbouring pieces before comparing).
Not replayed, because the chat's memory does not hold them:
  the events of a managed agent's run (`parent_id` set): the sub-agent's memory is its own;
  the events of a step or run that never ended (the server stopped mid-step, Stop during a planning call):
  its record was never written. Parallel tool calls are replayed in the order they started.

Times the chat shows (when a step, a tool call or a decision started and ended) are recorded with the step and
given to the events, live and replayed alike.
"""
from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard, get_args

from agents.events import (
    ArtifactCreated,
    ArtifactKind,
    CodeProposed,
    DecisionMade,
    DecisionOutcome,
    DecisionRequested,
    Event,
    ExecutionLog,
    FinalAnswer,
    InjectionFlagged,
    MemoryCompacted,
    ModelOutput,
    ModelRetrying,
    ModelTextDelta,
    Observation,
    PlanProposed,
    RequestKind,
    RunEndState,
    RunFinished,
    RunStarted,
    StepError,
    StepFinished,
    StepStarted,
    StepType,
    ToolCallProposed,
    ToolCallResult,
)
from agents.memory.steps import (
    ActionStep,
    FinalAnswerStep,
    MemoryStep,
    PlanningStep,
    SummaryStep,
    TaskStep,
)
from agents.models.base import TokenUsage

#: Events that exist only while a run streams (see the module docstring).
STREAMING_ONLY: tuple[type[Event], ...] = (ModelTextDelta, ModelRetrying)
#: A saved run without a recorded id (older memories) gets `restored-<its index>`.
RESTORED_RUN = "restored"
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp"})

Fields = dict[str, Any]  # run_id, step, parent_id: what every event of a step carries


def _at(moment: float) -> float:
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
    return FinalAnswer(**fields, value=final.output)


def run_finished(task: TaskStep, steps: Sequence[MemoryStep], final: FinalAnswerStep | None,
                 fields: Fields) -> RunFinished:
    """The end of the run of `task`, whose steps (after it) are `steps`; `final` its answer, if it gave one."""
    state = task.state if _is_end_state(task.state) else "success"  # none (or one the loop never writes)
    return RunFinished(**fields, state=state, output=final.output if final is not None else None,
                       duration_s=task.duration_s, token_usage=run_usage(steps),
                       steps=sum(1 for s in steps if isinstance(s, ActionStep)), error=task.error)


# ----- a step's frame -----------------------------------------------------------------------------------
def step_started(step: PlanningStep | ActionStep, fields: Fields) -> StepStarted:
    return StepStarted(**fields, step_type=_step_type(step), timestamp=_at(step.timing.start_time))


def model_output(step: PlanningStep | ActionStep, fields: Fields) -> ModelOutput:
    return ModelOutput(**fields, text=step.model_output, token_usage=step.token_usage,
                       duration_s=step.model_duration_s)


def observation(step: ActionStep, fields: Fields) -> Observation | None:
    """What the model is sent after the step: the last message the step added to the prompt."""
    if not step.messages:
        return None
    return Observation(**fields, text=str(step.messages[-1].get("content") or ""))


def step_finished(step: PlanningStep | ActionStep, fields: Fields) -> StepFinished:
    return StepFinished(**fields, step_type=_step_type(step), duration_s=step.timing.duration_s,
                        token_usage=step.token_usage, timestamp=_at(step.timing.end_time))


# The best guess asked for after the last step (state "max_steps"): a step of its own in the chat.
def guess_started(final: FinalAnswerStep, fields: Fields) -> StepStarted:
    return StepStarted(**fields, step_type="final", timestamp=_at(final.guess_timing.start_time))


def guess_output(final: FinalAnswerStep, fields: Fields) -> ModelOutput:
    return ModelOutput(**fields, text=str(final.output or ""), token_usage=final.guess_usage,
                       duration_s=final.guess_timing.duration_s)


def guess_finished(final: FinalAnswerStep, fields: Fields) -> StepFinished:
    return StepFinished(**fields, step_type="final", duration_s=final.guess_timing.duration_s,
                        token_usage=final.guess_usage, timestamp=_at(final.guess_timing.end_time))


# ----- what a step proposed and what came of it -----------------------------------------------------------
def _proposed(step: PlanningStep | ActionStep, kind: str, key: str, recorded: Any) -> Any:
    """What the model proposed, as a person was asked about it (their edit replaces it in the step)."""
    for record in step.decisions:
        if isinstance(record, dict) and record.get("kind") == kind and isinstance(record.get("proposed"), dict) \
                and key in record["proposed"]:
            return record["proposed"][key]
    return recorded


def plan_proposed(step: PlanningStep, fields: Fields) -> PlanProposed:
    return PlanProposed(**fields, plan=str(_proposed(step, "plan", "plan", step.plan)), is_update=step.is_update)


def code_proposed(step: ActionStep, fields: Fields) -> CodeProposed:
    return CodeProposed(**fields, code=str(_proposed(step, "code", "code", step.code or "")))


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


# ----- decisions ----------------------------------------------------------------------------------------
def decision_requested(record: dict[str, Any], kind: RequestKind, fields: Fields) -> DecisionRequested:
    """A decision record (agents/decisions/broker.py: request_id, kind, proposed, asked_at, outcome, detail, edited,
    decided_at) as its request."""
    return DecisionRequested(**fields, request_id=str(record.get("request_id", "")),
                             request_kind=kind, payload=dict(record.get("proposed") or {}),
                             timestamp=_at(record.get("asked_at") or 0.0))


def decision_made(record: dict[str, Any], kind: RequestKind, outcome: DecisionOutcome,
                  fields: Fields) -> DecisionMade:
    return DecisionMade(**fields, request_id=str(record.get("request_id", "")), request_kind=kind, outcome=outcome,
                        detail=str(record.get("detail") or ""), edited=record.get("edited"),
                        timestamp=_at(record.get("decided_at") or 0.0))


def decision_events(record: Any, fields: Fields) -> list[Event]:
    if not isinstance(record, dict):  # an unreadable record (a value that was not JSON): nothing to show
        return []
    kind, outcome = record.get("kind"), record.get("outcome")
    if not _is_request_kind(kind) or not _is_outcome(outcome):  # a kind or outcome the loop never writes
        return []
    return [decision_requested(record, kind, fields), decision_made(record, kind, outcome, fields)]


# Values read from a saved memory are strings; these say which ones the events' Literal fields can take.
def _is_end_state(value: object) -> TypeGuard[RunEndState]:
    return value in get_args(RunEndState)


def _is_request_kind(value: object) -> TypeGuard[RequestKind]:
    return value in get_args(RequestKind)


def _is_outcome(value: object) -> TypeGuard[DecisionOutcome]:
    return value in get_args(DecisionOutcome)


def _step_type(step: PlanningStep | ActionStep) -> StepType:
    return "planning" if isinstance(step, PlanningStep) else "action"



# ----- tool calls ---------------------------------------------------------------------------------------
#: How a rejected call's output began before records kept `rejected` (the reason follows).
_LEGACY_REJECTION = "Rejected by the user: "


@dataclass
class ToolCallRecord:
    """One tool call as it went; kept in `ActionStep.call_records` as a plain dict (`as_dict`)."""
    call_id: str
    name: str
    arguments: dict[str, Any]
    started_at: float = field(default_factory=time.time)
    log_offset: int = 0  # characters the step's code had printed when the call started
    output: str = ""  # as the person was shown it (cut to the event's limit); a rejected call's: the reason
    is_error: bool = False
    rejected: bool = False  # a person rejected the call: it never ran
    flagged: str = ""  # the excerpt of the output that looked like instructions, if any
    ended_at: float = 0.0
    finished: bool = False

    def as_dict(self) -> dict[str, Any]:
        from agents.memory.codec import json_safe

        return {"call_id": self.call_id, "name": self.name, "arguments": json_safe(self.arguments),
                "started_at": self.started_at, "log_offset": self.log_offset, "output": self.output,
                "is_error": self.is_error, "rejected": self.rejected, "flagged": self.flagged,
                "ended_at": self.ended_at, "finished": self.finished}

    @classmethod
    def from_dict(cls, data: Any) -> ToolCallRecord | None:
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            return None
        arguments = data.get("arguments")
        output, is_error = str(data.get("output") or ""), bool(data.get("is_error"))
        rejected = bool(data.get("rejected"))
        if is_error and not rejected and output.startswith(_LEGACY_REJECTION):  # saved before `rejected` was kept
            output, is_error, rejected = output[len(_LEGACY_REJECTION):], False, True
        return cls(call_id=str(data.get("call_id", "")), name=data["name"],
                   arguments=dict(arguments) if isinstance(arguments, dict) else {},
                   started_at=float(data.get("started_at") or 0.0), log_offset=int(data.get("log_offset") or 0),
                   output=output, is_error=is_error, rejected=rejected,
                   flagged=str(data.get("flagged") or ""), ended_at=float(data.get("ended_at") or 0.0),
                   finished=bool(data.get("finished")))


def tool_call_proposed(call: ToolCallRecord, fields: Fields) -> ToolCallProposed:
    return ToolCallProposed(**fields, call_id=call.call_id, tool_name=call.name, arguments=dict(call.arguments),
                            timestamp=_at(call.started_at))


def injection_flagged(call: ToolCallRecord, fields: Fields) -> InjectionFlagged:
    return InjectionFlagged(**fields, source=f"tool:{call.name}", excerpt=call.flagged)


def tool_call_result(call: ToolCallRecord, fields: Fields) -> ToolCallResult:
    return ToolCallResult(**fields, call_id=call.call_id, tool_name=call.name, output=call.output,
                          is_error=call.is_error, rejected=call.rejected, timestamp=_at(call.ended_at))


# ----- replaying a memory -------------------------------------------------------------------------------
def _call_events(call: ToolCallRecord, decisions: list[Any], fields: Fields) -> list[Event]:
    """A call's events; the decisions made during it are taken from the head of `decisions` (in time order):
    its approval, and the question of an `ask_user` call."""
    events: list[Event] = [tool_call_proposed(call, fields)]
    while decisions:
        head = decisions[0]
        kind = head.get("kind") if isinstance(head, dict) else None
        payload = head.get("proposed") if isinstance(head, dict) else None
        ours = (kind == "tool_call" and isinstance(payload, dict) and payload.get("call_id") == call.call_id) \
            or (kind == "question" and call.name == "ask_user")
        if not ours:
            break
        events += decision_events(decisions.pop(0), fields)
    if call.flagged:
        events.append(injection_flagged(call, fields))
    if call.finished:
        events.append(tool_call_result(call, fields))
    return events


def _legacy_calls(step: ActionStep, fields: Fields) -> list[Event]:
    """A tool-calling step saved before calls were recorded: the calls, and what came back as one text."""
    from agents.guard import unfence

    events: list[Event] = []
    for number, call in enumerate(step.tool_calls):
        call_id = call.id or f"{fields['run_id']}-{step.step_number}-{number}"
        events.append(ToolCallProposed(**fields, call_id=call_id, tool_name=call.name,
                                       arguments=dict(call.arguments or {})))
        if len(step.tool_calls) == 1:
            events.append(ToolCallResult(**fields, call_id=call_id, tool_name=call.name,
                                         output=unfence(step.observations or "")))
    return events


def action_events(step: ActionStep, fields: Fields, workdir: Path, after_start: Sequence[Event] = ()) -> list[Event]:
    """An action step's events in the order the loop streams them (`after_start`: a compaction made as the
    step started)."""
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
        events += _legacy_calls(step, fields)
    printed = 0
    for call in calls:
        offset = min(max(call.log_offset, printed), len(step.logs))
        if offset > printed:
            events.append(execution_log(step.logs[printed:offset], fields))
            printed = offset
        events += _call_events(call, decisions, fields)
    if len(step.logs) > printed:
        events.append(execution_log(step.logs[printed:], fields))
    for record in decisions:  # any left (a record without its call): shown, not lost
        events += decision_events(record, fields)
    for index, relative in enumerate(step.artifacts):
        path = Path(workdir) / relative
        try:  # a file deleted since, or a path that leads out of the workspace, is not shown
            shown = path.is_file() and path.resolve().is_relative_to(Path(workdir).resolve())
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


def memory_compacted(summary: SummaryStep, fields: Fields) -> MemoryCompacted:
    return MemoryCompacted(**fields, tokens_before=summary.tokens_before, tokens_after=summary.tokens_after,
                           steps_folded=summary.newly_folded or summary.folded_steps, budget=summary.budget,
                           summary_source="fallback" if summary.source == "fallback" else "model")


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
        return [memory_compacted(s, self.fields(step)) for s in due]

    def end(self, final: FinalAnswerStep | None) -> list[Event]:
        """The events that close the run: a best guess's step, the answer, RunFinished (when it ended)."""
        self.ended = True
        fields = self.fields(self.end_step())
        guess = final is not None and self.task.state == "max_steps"
        during_guess = self.compactions_at(fields["step"]) if guess else []
        # A compaction whose step left no record (a planning call stopped) is shown where it came in the memory.
        events: list[Event] = [memory_compacted(s, self.fields(s.step_number)) for s in self.compacted]
        self.compacted = []
        if final is not None:
            if guess:
                events += [guess_started(final, fields), *during_guess, guess_output(final, fields),
                           guess_finished(final, fields)]
            events.append(final_answer(final, fields))
        if final is not None or self.task.state:
            task = self.task
            if not task.state:  # saved before runs recorded their end: what the chat showed then
                duration = sum(s.timing.duration_s for s in self.steps if isinstance(s, ActionStep))
                task = TaskStep(task=task.task, run_id=task.run_id, state="success", duration_s=duration)
            events.append(run_finished(task, self.steps, final, fields))
        return events


def replay(steps: Sequence[MemoryStep], workdir: Path) -> Iterator[tuple[MemoryStep | None, list[Event]]]:
    """(step, its events) for each step of a saved memory, in order, as the loop streamed them; `workdir` is
    where the step's files are. A run that ended without an answer (stopped, failed) is closed by a
    `(None, [RunFinished])` before the next run's task. History and system steps have no events."""
    run: _Run | None = None
    for index, step in enumerate(steps):
        if isinstance(step, TaskStep):
            if run is not None and not run.ended:
                yield None, run.end(None)
            run = _Run(task=step, run_id=step.run_id or f"{RESTORED_RUN}-{index}")
            yield step, [run_started(step, run.fields(step.steps_before))]
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
                yield step, action_events(step, fields, workdir, after_start)
        elif isinstance(step, SummaryStep):
            run.steps.append(step)
            if step.step_number:  # shown when its step starts (it was made then)
                run.compacted.append(step)
                yield step, []
            else:  # saved before compactions recorded their step
                yield step, [memory_compacted(step, run.fields(0))]
        elif isinstance(step, FinalAnswerStep):
            yield step, run.end(step)
        else:
            yield step, []
    if run is not None and not run.ended:
        yield None, run.end(None)


# ----- comparing a live stream with a replay ------------------------------------------------------------
def replayable(events: Iterable[Event]) -> list[Event]:
    """The part of a live stream that a replay gives back: streaming-only events and managed agents' events
    dropped, neighbouring ExecutionLog pieces of a step joined."""
    kept: list[Event] = []
    for event in events:
        if isinstance(event, STREAMING_ONLY) or event.parent_id is not None:
            continue
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
