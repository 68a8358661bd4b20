"""Carrying a conversation into a fresh agent: rebuild the chat from a memory's steps, give the agent the
memory, and rebuild the sandbox's variables by re-running the recorded code.

Used when a saved chat is reopened (after a reload or a restart) and when changed settings need a new agent
mid-conversation: in both cases nothing the person did is lost.
"""
from __future__ import annotations

from collections.abc import Collection
from typing import Any

from agents import events as ev
from agents import step_events
from agents.memory import ActionStep, AgentMemory, HistoryStep, PlanningStep, TaskStep
from agents.models.base import message_text
from ui.chat.formatting import clip
from ui.chat.render import Transcript
from ui.session.workspace_access import WorkspaceFiles
from ui.uploads.intake import UploadResult


# ----- steps -> chat ---------------------------------------------------------------------------------
def _take_turn(turns: list[dict[str, Any]], task: str) -> dict[str, Any] | None:
    for index, turn in enumerate(turns):
        if turn.get("task") == task:
            return turns.pop(index)
    return None


def uploads_of(turn: dict[str, Any] | None, files: WorkspaceFiles,
               present: Collection[str] | None = None) -> list[UploadResult]:
    """The uploads a saved message sent that are still in the workspace (a name that is not a plain file name,
    or a file since deleted, is left out), as `files` lists it (`present`: that listing, if already taken)."""
    results = []
    items = [item for item in (turn or {}).get("uploads") or [] if isinstance(item, dict)]
    if items and present is None:
        present = files.list()
    for item in items:
        name = str(item.get("name") or "")
        path = files.root / name
        if not name or "/" in name or "\\" in name or name not in (present or ()):
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
                  files: WorkspaceFiles) -> list[UploadResult]:
    """Rebuild a chat from a memory: each step's events, made by the mapping the live run used
    (agents/step_events/), applied to `transcript`, so the chat looks as it did, rendered by the same code.
    The person's messages come from `turns`; turns with no step in the memory (their run was cut short) are
    shown where they were sent. Returns the uploads found. The workspace's files are what `files` lists (whatever
    runs the sandbox: ui/session/workspace_access.py), taken once."""
    turns = [dict(t) for t in turns if isinstance(t, dict)]
    tasks = {step.task for step in memory.steps if isinstance(step, TaskStep)}
    uploads: list[UploadResult] = []
    present = files.list()
    for step, events in step_events.replay(memory.steps, files.root, present.__contains__):
        if isinstance(step, HistoryStep):
            lines = [f"**{m.get('role', 'user')}:** {clip(message_text(m), 500)}" for m in step.history]
            transcript.add_note("\n\n".join(lines), title="🕘 Earlier conversation", status="done")
        elif isinstance(step, TaskStep):
            show_unfinished(transcript, turns, tasks, step.task)
            turn = _take_turn(turns, step.task)
            sent = uploads_of(turn, files, present)
            uploads += sent
            transcript.add_message(turn.get("text", "") if turn else step.task, sent)
        for event in events:
            transcript.apply(event)
    show_unfinished(transcript, turns, tasks, None)
    return uploads


#: A message named in the restore note is cut to this many characters.
MESSAGE_CHARS = 60


def step_names(memory: AgentMemory | None) -> dict[int, str]:
    """How the chat names each recorded step, by the agent's step number: the agent numbers steps across the
    conversation, the chat within each message's run (ui/chat/render.py `step_in_run`), so a note says
    "step 2 of “Analyse the penguins…”" where the agent's number (7) exists nowhere in the chat."""
    names: dict[int, str] = {}
    if memory is None:
        return names
    task, offset = "", None
    for step in memory.steps:
        if isinstance(step, TaskStep):
            task, offset = step.task, None
        elif isinstance(step, (PlanningStep, ActionStep)):
            offset = step.step_number - 1 if offset is None else offset
            message = clip(" ".join((task.strip().splitlines() or [""])[0].split()), MESSAGE_CHARS)
            number = max(1, step.step_number - offset)
            names.setdefault(step.step_number, f"Step {number} of “{message}”" if message else f"Step {number}")
    return names


def shown_steps(memory: AgentMemory | None) -> int:
    """How many steps the person saw in the chat: its "Step N" entries (the agent's action steps), not the
    records of messages, plans, answers or summaries a memory also keeps."""
    return sum(1 for _ in memory.action_steps()) if memory is not None else 0


def steps_back(count: int) -> str:
    """How many steps came back, in words ("1 step shown above."), or "" for none."""
    return "" if count <= 0 else f"{count} step shown above." if count == 1 else f"{count} steps shown above."


def _not_rerun(why: str) -> str:
    """Why a step was not re-run (agents/loop/restore.py `skip_reason`, or the tools it called), as said in the note."""
    if why == "rejected":
        return "was not re-run: you rejected it, so it never ran"
    if why == "stopped before it ran":
        return "was not re-run: you stopped the run while it waited for your decision, so it never ran"
    if why == "stopped":
        return "was not re-run: you stopped it before it finished; variables it made may be missing"
    if why.startswith("rejected call: "):
        return (f"was not re-run (you rejected its call to {why.removeprefix('rejected call: ')}); "
                "variables it made are missing")
    return f"was not re-run ({why}); variables it made are missing"


def rebuild_note(report: Any, restored_steps: int, headline: str = "♻️ **Chat restored.**",
                 memory: AgentMemory | None = None) -> str:
    """The chat note after re-running the recorded code: how many steps (`restored_steps`, as the chat counts
    them: `shown_steps`), and what no longer runs the same. Steps are named as the chat names them when `memory`
    (the one re-run) is given."""
    names = step_names(memory)

    def name(number: int) -> str:
        return names.get(number, f"Step {number}")

    rerun = len(report.rerun)
    lines = [f"{headline} Re-ran {rerun} recorded code step{'s' if rerun != 1 else ''} in a fresh "
             f"sandbox to rebuild its variables" + (" — all gave the same output." if rerun and report.ok else ".")]
    workspace_error = getattr(report, "workspace_error", None)
    if not rerun:  # nothing re-ran: say how much came back, and why below (a skipped step says so itself)
        lines = [" ".join(filter(None, (headline, steps_back(restored_steps)))) + (
            " Its code was not re-run: earlier variables are missing." if workspace_error
            else "" if report.skipped else " There was no code to re-run.")]
    if workspace_error:
        lines.append(f"- ⚠️ {clip(str(workspace_error), 400)}.")
    for mismatch in report.mismatches:
        if mismatch.error:
            lines.append(f"- ⚠️ {name(mismatch.step_number)} now fails: `{clip(mismatch.error.strip(), 300)}`")
        else:
            lines.append(f"- ⚠️ {name(mismatch.step_number)} printed different output: now "
                         f"`{clip(mismatch.actual.strip(), 160) or '(nothing)'}`, was "
                         f"`{clip(mismatch.expected.strip(), 160) or '(nothing)'}`")
    for number, why in report.skipped:
        lines.append(f"- {name(number)} {_not_rerun(why)}.")
    removed = list(getattr(report, "removed", []) or [])
    if removed:
        shown = ", ".join(f"`{path}`" for path in removed[:10]) + (f" and {len(removed) - 10} more"
                                                                   if len(removed) > 10 else "")
        lines.append(f"- The re-run wrote files that were no longer in the workspace; they were removed again, so "
                     f"the files are as you left them: {shown}.")
    return "\n".join(lines)


def carry_memory_into(agent: Any, memory: AgentMemory, transcript: Transcript, headline: str) -> None:
    """Give `agent` the memory (screening it for injected instructions), rebuild its sandbox's variables by
    re-running the recorded code, and say in the chat what happened (`headline` first)."""
    from agents.loop.restore import restore_agent_memory

    flagged: list[ev.Event] = []
    restore_agent_memory(agent, memory, emit=flagged.append)
    for event in flagged:
        transcript.apply(event)
    rebuild_variables(agent, memory, transcript, headline)


def keep_memory_in(agent: Any, memory: AgentMemory, transcript: Transcript, note: str) -> None:
    """Give `agent` the memory (screened as `carry_memory_into` does) when its sandbox kept the variables (the
    chat's sandbox attached again): nothing is re-run; `note` says so in the chat."""
    from agents.loop.restore import restore_agent_memory

    flagged: list[ev.Event] = []
    restore_agent_memory(agent, memory, emit=flagged.append)
    for event in flagged:
        transcript.apply(event)
    transcript.add_note(note)


def rebuild_variables(agent: Any, memory: AgentMemory, transcript: Transcript, headline: str) -> None:
    """Re-run the recorded code of `memory` in `agent`'s (fresh) sandbox to rebuild its variables, and say in the
    chat what happened (`headline` first): also for an agent that keeps its memory and got a new sandbox (its
    imports changed)."""
    from agents.loop.restore import rebuild_sandbox_state

    if hasattr(agent, "sandbox") and any(s.code for s in memory.action_steps()):
        try:
            report = rebuild_sandbox_state(memory, agent)
        except Exception as exc:  # the conversation is kept even if its code cannot run again
            transcript.add_note(f"{headline} Its code could not be re-run ({type(exc).__name__}: {exc}): "
                                "earlier variables are missing.")
        else:
            transcript.add_note(rebuild_note(report, shown_steps(memory), headline, memory))
    else:
        transcript.add_note(" ".join(filter(None, (headline, steps_back(shown_steps(memory))))))
