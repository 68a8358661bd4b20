"""Carrying a conversation into a fresh agent: rebuild the chat from a memory's steps, give the agent the
memory, and rebuild the sandbox's variables by re-running the recorded code.

Used when a saved chat is reopened (after a reload or a restart) and when changed settings need a new agent
mid-conversation: in both cases nothing the person did is lost.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents import events as ev
from agents.decisions import DecisionRecord
from agents.events import new_id
from agents.guard import unfence
from agents.memory import (
    ActionStep,
    AgentMemory,
    FinalAnswerStep,
    HistoryStep,
    PlanningStep,
    SummaryStep,
    TaskStep,
)
from agents.models.base import TokenUsage, message_text
from ui.chat.formatting import IMAGE_EXTENSIONS, clip
from ui.chat.render import Transcript
from ui.uploads.intake import UploadResult

RESTORED_RUN = "restored"


# ----- steps -> chat ---------------------------------------------------------------------------------
def _take_turn(turns: list[dict[str, Any]], task: str) -> dict[str, Any] | None:
    for index, turn in enumerate(turns):
        if turn.get("task") == task:
            return turns.pop(index)
    return None


def _uploads_of(turn: dict[str, Any] | None, workspace: Path) -> list[UploadResult]:
    results = []
    for item in (turn or {}).get("uploads") or []:
        name = str(item.get("name") or "")
        path = workspace / name
        if not name or "/" in name or "\\" in name or not path.is_file():
            continue
        results.append(UploadResult(original_name=str(item.get("original") or name), size_bytes=int(item.get("size") or 0),
                                    safe_name=name, path=path, kind=item.get("kind"), preview=str(item.get("preview") or "")))
    return results


UNFINISHED_NOTE = ("⚠️ The run of this message ended before it finished a step (the server stopped or the page "
                   "went away), so the agent has nothing of it. Send it again to continue.")


def show_unfinished(transcript: Transcript, turns: list[dict[str, Any]], tasks: set[str], upto: str | None) -> None:
    """Show (and take from `turns`) the messages before the turn of task `upto` (all with None) whose run left
    no step in the memory: what the person sent is never lost, even when its run was."""
    while turns and turns[0].get("task") != upto and turns[0].get("task") not in tasks:
        turn = turns.pop(0)
        transcript.add_user(str(turn.get("text") or turn.get("task") or ""))
        transcript.add_note(UNFINISHED_NOTE)


def replay_memory(transcript: Transcript, memory: AgentMemory, turns: list[dict[str, Any]], workspace: Path) -> list[UploadResult]:
    """Rebuild a chat from a memory: each step becomes the events a live run emitted for it, applied to
    `transcript` (so the chat looks as it did, rendered by the same code). Turns with no step in the memory
    (their run was cut short) are shown where they were sent. Returns the uploads found."""
    turns = [dict(t) for t in turns if isinstance(t, dict)]
    tasks = {step.task for step in memory.steps if isinstance(step, TaskStep)}
    uploads: list[UploadResult] = []
    run_id, run_steps, run_tokens, run_seconds = RESTORED_RUN, 0, TokenUsage(), 0.0

    def emit(event: ev.Event) -> None:
        transcript.apply(event)

    for index, step in enumerate(memory.steps):
        if isinstance(step, HistoryStep):
            lines = [f"**{m.get('role', 'user')}:** {clip(message_text(m), 500)}" for m in step.history]
            transcript.add_note("\n\n".join(lines), title="🕘 Earlier conversation", status="done")
        elif isinstance(step, TaskStep):
            run_id = step.run_id or f"{RESTORED_RUN}-{index}"
            run_steps, run_tokens, run_seconds = 0, TokenUsage(), 0.0
            show_unfinished(transcript, turns, tasks, step.task)
            turn = _take_turn(turns, step.task)
            files = _uploads_of(turn, workspace)
            uploads += files
            transcript.add_user(turn.get("text", "") if turn else step.task, [str(r.path) for r in files])
            transcript.add_uploads(files)
            emit(ev.RunStarted(run_id=run_id, step=0, task=step.task, agent_name="restored", model_id="", max_steps=0))
        elif isinstance(step, PlanningStep):
            fields = dict(run_id=step_run(step, run_id), step=step.step_number)
            emit(ev.StepStarted(**fields, step_type="planning"))
            emit(ev.PlanProposed(**fields, plan=step.plan, is_update=step.is_update))
            replay_decisions(transcript, fields, decision_records(step))
            emit(ev.StepFinished(**fields, step_type="planning", duration_s=step.timing.duration_s,
                                 token_usage=step.token_usage))
        elif isinstance(step, ActionStep):
            fields = dict(run_id=step_run(step, run_id), step=step.step_number)
            run_steps += 1
            run_tokens = run_tokens + step.token_usage
            run_seconds += step.timing.duration_s
            emit(ev.StepStarted(**fields, step_type="action"))
            emit(ev.ModelOutput(**fields, text=step.model_output, token_usage=step.token_usage,
                                duration_s=step.model_duration_s))
            decisions = decision_records(step)
            if step.code:
                emit(ev.CodeProposed(**fields, code=step.code))
                replay_decisions(transcript, fields, decisions, lambda record: record.kind == "code")
            else:
                for number, call in enumerate(step.tool_calls):
                    call_id = call.id or f"{fields['run_id']}-{step.step_number}-{number}"
                    emit(ev.ToolCallProposed(**fields, call_id=call_id, tool_name=call.name,
                                             arguments=dict(call.arguments or {})))
                    replay_decisions(transcript, fields, decisions,
                                     lambda record, call_id=call_id: record.proposed.get("call_id") == call_id)
                    if len(step.tool_calls) == 1:
                        emit(ev.ToolCallResult(**fields, call_id=call_id, tool_name=call.name,
                                               output=unfence(step.observations or "")))
                if len(step.tool_calls) != 1 and step.observations:
                    emit(ev.Observation(**fields, text=unfence(step.observations)))
            replay_decisions(transcript, fields, decisions)  # the rest: calls from code, questions
            if step.logs:
                emit(ev.ExecutionLog(**fields, text=step.logs))
            for relative in step.artifacts:
                path = (workspace / relative)
                if not path.resolve().is_relative_to(workspace.resolve()) or not path.is_file():  # hostile memory
                    continue
                kind = "image" if path.suffix.lower() in IMAGE_EXTENSIONS else "file"
                emit(ev.ArtifactCreated(**fields, path=str(path), relative_path=relative, artifact_kind=kind,
                                        size_bytes=path.stat().st_size))
            if step.error:
                first = step.error.strip().splitlines()[0] if step.error.strip() else ""
                match = re.match(r"^(\w+(?:Error|Exception|Interrupt))\b", first)
                rejected = re.match(r"^The user rejected this action(?: with this reason: (.*))?", first)
                if rejected:  # the person's decision, shown with its reason as it was live
                    emit(ev.StepError(**fields, error_type="RejectedByUser", message=(rejected.group(1) or "Rejected.")))
                else:
                    emit(ev.StepError(**fields, error_type=match.group(1) if match else "Error", message=step.error))
            emit(ev.StepFinished(**fields, step_type="action", duration_s=step.timing.duration_s,
                                 token_usage=step.token_usage))
        elif isinstance(step, FinalAnswerStep):
            rid = step.run_id or run_id
            emit(ev.FinalAnswer(run_id=rid, step=run_steps, value=step.output))
            emit(ev.RunFinished(run_id=rid, step=run_steps, state="success", output=step.output,
                                duration_s=run_seconds, token_usage=run_tokens, steps=run_steps))
        elif isinstance(step, SummaryStep):
            emit(ev.MemoryCompacted(run_id=run_id, step=0, tokens_before=step.tokens_before,
                                    tokens_after=step.tokens_after, steps_folded=step.folded_steps,
                                    summary_source=step.source))
    show_unfinished(transcript, turns, tasks, None)
    return uploads


def decision_records(step: PlanningStep | ActionStep) -> list[DecisionRecord]:
    """The step's decisions that can be read (a record that cannot is left out, not an error)."""
    records = (DecisionRecord.from_dict(data) for data in step.decisions)
    return [record for record in records if record is not None]


def replay_decisions(transcript: Transcript, fields: dict[str, Any], records: list[DecisionRecord],
                     which: Callable[[DecisionRecord], bool] = lambda record: True) -> None:
    """Show the recorded decisions `which` selects (and take them from `records`) as the events the live run
    emitted: the pause with what the agent proposed, the person's answer to a question as their message, then
    the decision with its reason or edit, so a reopened chat shows them as they were shown live."""
    for record in [r for r in records if which(r)]:
        records.remove(record)
        request_id = record.request_id or new_id()
        transcript.apply(ev.DecisionRequested(**fields, request_id=request_id, request_kind=record.kind,
                                              payload=record.proposed))
        if record.kind == "question" and record.outcome == "answer" and record.detail.strip():
            transcript.add_user(record.detail)
        transcript.apply(ev.DecisionMade(**fields, request_id=request_id, request_kind=record.kind,
                                         outcome=record.outcome, detail=record.detail, edited=record.edited))


def step_run(step: Any, fallback: str) -> str:
    return getattr(step, "run_id", "") or fallback


def rebuild_note(report: Any, restored_steps: int, headline: str = "♻️ **Chat restored.**") -> str:
    """The chat note after re-running the recorded code: how many steps, and what no longer runs the same."""
    rerun = len(report.rerun)
    lines = [f"{headline} Re-ran {rerun} recorded code step{'s' if rerun != 1 else ''} in a fresh "
             f"sandbox to rebuild its variables" + (" — all gave the same output." if rerun and report.ok else ".")]
    if not rerun and not report.skipped:
        lines = [f"{headline} ({restored_steps} steps). There was no code to re-run."]
    for mismatch in report.mismatches:
        if mismatch.error:
            lines.append(f"- ⚠️ Step {mismatch.step_number} now fails: `{clip(mismatch.error.strip(), 300)}`")
        else:
            lines.append(f"- ⚠️ Step {mismatch.step_number} printed different output: now "
                         f"`{clip(mismatch.actual.strip(), 160) or '(nothing)'}`, was "
                         f"`{clip(mismatch.expected.strip(), 160) or '(nothing)'}`")
    for number, why in report.skipped:
        lines.append(f"- Step {number} was not re-run ({why}); variables it made are missing.")
    return "\n".join(lines)


def carry_memory_into(agent: Any, memory: AgentMemory, transcript: Transcript, headline: str) -> None:
    """Give `agent` the memory (screening it for injected instructions), rebuild its sandbox's variables by
    re-running the recorded code, and say in the chat what happened (`headline` first)."""
    from agents.memory.restore import rebuild_sandbox_state, restore_agent_memory

    flagged: list[ev.Event] = []
    restore_agent_memory(agent, memory, emit=flagged.append)
    for event in flagged:
        transcript.apply(event)
    if hasattr(agent, "sandbox") and any(s.code for s in memory.action_steps()):
        try:
            report = rebuild_sandbox_state(memory, agent)
        except Exception as exc:  # the conversation is kept even if its code cannot run again
            transcript.add_note(f"{headline} Its code could not be re-run ({type(exc).__name__}: {exc}): "
                                "earlier variables are missing.")
        else:
            transcript.add_note(rebuild_note(report, len(memory.steps), headline))
    else:
        transcript.add_note(f"{headline} ({len(memory.steps)} steps).")
