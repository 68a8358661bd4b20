"""Retry and Edit-and-resend: a conversation rewound to before its last message, which then runs again.
The parts of it; `Session.rewind_last_turn` (ui/session/session.py) puts them together.

What "before the last message" means for each part of a session:
- memory: the steps from the last message's TaskStep on are dropped (in a copy whose prompt is rebuilt from the
  steps kept, as for a reopened chat);
- chat: rebuilt from the kept steps and messages by the code that rebuilds a reopened chat (ui/saved/restore.py),
  so the rewound chat is what reopening it would show;
- variables: a fresh sandbox worker in which the kept code steps are re-run in order (`carry_memory_into`, the
  path a reopened or a woken chat takes). Why re-running: a worker cannot be snapshotted or forked (its
  seccomp filter refuses fork), and re-running recorded code is what reopening already relies on. Its report
  goes into the chat note: steps that print differently or fail now, and steps skipped because they called
  tools (re-running them would search the web or ask the person again), whose variables are then missing;
- files: the workspace is not rolled back. Re-running code leaves the files as they were: what it creates that
  was not there before (a file the person deleted) is removed again (agents/loop/restore.py); files the undone
  answer wrote or changed stay as they are, and the note names the ones its steps recorded. The message's
  uploads stay in the workspace and go with the message again;
- disk: the rewound chat is saved at once ("rewind"), so a reload or another tab sees it even if the run of the
  resent message never finishes a step.

The agent is kept when the settings are unchanged (its model goes on: a sampling model gives a new sample, a
replay script its next reply), else a new one is built first; if that fails, nothing is changed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.loop.restore import restore_agent_memory
from agents.memory import ActionStep, AgentMemory, TaskStep
from ui.chat.render import Transcript
from ui.saved.restore import carry_memory_into, replay_memory, uploads_of
from ui.session.workspace_access import WorkspaceFiles
from ui.uploads.intake import UploadResult

HEADLINE = "↩️ **Rewound to before your last message.**"


class RewindRefused(Exception):
    """Retry or edit cannot happen now. The message is for the person; nothing was changed."""


@dataclass(frozen=True)
class LastMessage:
    """What the person sent last: its text and the uploads that are still in the workspace."""
    text: str
    uploads: tuple[UploadResult, ...] = ()


def message_of(turn: dict[str, Any], files: WorkspaceFiles) -> LastMessage:
    """A saved message (one of a session's turns) as it can be sent again (its uploads still in `files`)."""
    return LastMessage(str(turn.get("text") or ""), tuple(uploads_of(turn, files)))


def last_turn_start(memory: AgentMemory | None, turns: list[dict[str, Any]]) -> int | None:
    """Where the last message's steps begin in `memory.steps` (its TaskStep); None if it left none.

    The last message's run, if it recorded anything, recorded the memory's last TaskStep, so that step is the
    one when its task is the message's. (Steps are matched to messages by task text, as when a chat is
    reopened; a message sent again after a run that left nothing, as the chat suggests then, is this case.)
    """
    if memory is None or not turns:
        return None
    for index in range(len(memory.steps) - 1, -1, -1):
        step = memory.steps[index]
        if isinstance(step, TaskStep):
            return index if step.task == turns[-1].get("task") else None
    return None


def memory_before(memory: AgentMemory, index: int) -> AgentMemory:
    """A copy of `memory` with its first `index` steps, its prompt rebuilt from them."""
    kept = AgentMemory(memory.system_prompt.system_prompt)
    kept.steps = list(memory.steps[:index])
    kept.rebuild_prompt()
    return kept


def before_last_turn(memory: AgentMemory | None, turns: list[dict[str, Any]]) -> tuple[AgentMemory, list[str]]:
    """The memory as it was before the last message (a copy), and the files its undone steps recorded writing."""
    if memory is None:
        return AgentMemory(), []
    start = last_turn_start(memory, turns)
    if start is None:
        start = len(memory.steps)  # the last message's run left no step: every step is kept
    return memory_before(memory, start), files_written(memory.steps[start:])


def files_written(steps: list[Any]) -> list[str]:
    """The workspace files the given steps recorded writing, each once, in order."""
    return list(dict.fromkeys(path for step in steps if isinstance(step, ActionStep) for path in step.artifacts))


def refusal(closed: bool, running: bool, waiting: bool, has_message: bool, action: str) -> str | None:
    """Why `action` ("retry", "edit your last message") cannot happen now, or None."""
    if closed:
        return "This chat was closed here: reload the page to continue it."
    if running and waiting:
        return (f"The agent is waiting for your decision: answer it in the panel under the chat (or press Stop), "
                f"then {action}.")
    if running:
        return f"A run is going: wait for it to end (or press Stop), then {action}."
    if not has_message:
        return f"There is no message to {action.split(' ')[0]} yet: send one first."
    return None


def rewound_chat(transcript: Transcript, kept: AgentMemory, turns: list[dict[str, Any]], files: WorkspaceFiles,
                 agent: Any, undone: list[str]) -> list[UploadResult]:
    """Fill `transcript` (new) with the chat as it was before the last message, give `agent` the kept memory
    (with code steps, their variables rebuilt in its fresh sandbox) and note what happened. Returns the uploads
    of the kept messages."""
    uploads = replay_memory(transcript, kept, turns, files)
    if kept.steps:
        carry_memory_into(agent, kept, transcript, HEADLINE)
    else:
        restore_agent_memory(agent, kept)
        transcript.add_note(f"{HEADLINE} The agent starts again from an empty memory and a fresh sandbox.")
    if undone:
        names = ", ".join(f"`{name}`" for name in undone)
        transcript.add_note(f"Files the undone answer wrote stay in the workspace: {names}.")
    return uploads
