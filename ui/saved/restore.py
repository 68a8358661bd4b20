"""Carrying a conversation into a fresh agent: rebuild the chat from a memory's steps, give the agent the
memory, and rebuild the sandbox's variables by re-running the recorded code.

Used when a saved chat is reopened (after a reload or a restart) and when changed settings need a new agent
mid-conversation: in both cases nothing the person did is lost.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from agents import events as ev
from agents import step_events
from agents.memory import AgentMemory, HistoryStep, TaskStep
from agents.models.base import message_text
from ui.chat.formatting import clip
from ui.chat.render import Transcript
from ui.uploads.intake import UploadResult


# ----- steps -> chat ---------------------------------------------------------------------------------
def _take_turn(turns: list[dict[str, Any]], task: str) -> dict[str, Any] | None:
    for index, turn in enumerate(turns):
        if turn.get("task") == task:
            return turns.pop(index)
    return None


def uploads_of(turn: dict[str, Any] | None, workspace: Path) -> list[UploadResult]:
    """The uploads a saved message sent that are still in the workspace (a name that is not a plain file name,
    or a file since deleted, is left out)."""
    results = []
    for item in (turn or {}).get("uploads") or []:
        name = str(item.get("name") or "")
        path = workspace / name
        if not name or "/" in name or "\\" in name or not path.is_file():
            continue
        results.append(UploadResult(original_name=str(item.get("original") or name),
                                    size_bytes=int(item.get("size") or 0), safe_name=name, path=path,
                                    kind=item.get("kind"), preview=str(item.get("preview") or "")))
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


def replay_memory(transcript: Transcript, memory: AgentMemory, turns: list[dict[str, Any]],
                  workspace: Path) -> list[UploadResult]:
    """Rebuild a chat from a memory: each step's events, made by the mapping the live run used
    (agents/step_events.py), applied to `transcript`, so the chat looks as it did, rendered by the same code.
    The person's messages come from `turns`; turns with no step in the memory (their run was cut short) are
    shown where they were sent. Returns the uploads found."""
    turns = [dict(t) for t in turns if isinstance(t, dict)]
    tasks = {step.task for step in memory.steps if isinstance(step, TaskStep)}
    uploads: list[UploadResult] = []
    for step, events in step_events.replay(memory.steps, workspace):
        if isinstance(step, HistoryStep):
            lines = [f"**{m.get('role', 'user')}:** {clip(message_text(m), 500)}" for m in step.history]
            transcript.add_note("\n\n".join(lines), title="🕘 Earlier conversation", status="done")
        elif isinstance(step, TaskStep):
            show_unfinished(transcript, turns, tasks, step.task)
            turn = _take_turn(turns, step.task)
            files = uploads_of(turn, workspace)
            uploads += files
            transcript.add_message(turn.get("text", "") if turn else step.task, files)
        for event in events:
            transcript.apply(event)
    show_unfinished(transcript, turns, tasks, None)
    return uploads


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
    from agents.loop.restore import rebuild_sandbox_state, restore_agent_memory

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
