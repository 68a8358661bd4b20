"""Retry and Edit-and-resend: a conversation rewound to before its last message, which then runs again.

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
- files: the workspace is not rolled back. Re-run code writes its files again (the same content when it is
  deterministic); files the undone answer wrote or changed stay as they are, and the note names the ones its
  steps recorded. The message's uploads stay in the workspace and go with the message again;
- disk: the rewound chat is saved at once ("rewind"), so a reload or another tab sees it even if the run of the
  resent message never finishes a step.

The agent is kept when the settings are unchanged (its model goes on: a sampling model gives a new sample, a
replay script its next reply), else a new one is built first; if that fails, nothing is changed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agents.memory import ActionStep, AgentMemory, TaskStep
from agents.memory.restore import restore_agent_memory
from ui.chat.formatting import for_visitor
from ui.chat.render import Transcript
from ui.saved.restore import carry_memory_into, replay_memory, uploads_of
from ui.session import stopping
from ui.uploads.intake import UploadResult

if TYPE_CHECKING:
    from ui.session.session import Session
    from ui.settings import RunSettings

HEADLINE = "↩️ **Rewound to before your last message.**"


class RewindRefused(Exception):
    """Retry or edit cannot happen now. The message is for the person; nothing was changed."""


@dataclass(frozen=True)
class LastMessage:
    """What the person sent last: its text and the uploads that are still in the workspace."""
    text: str
    uploads: tuple[UploadResult, ...] = ()


def last_message(session: Session) -> LastMessage | None:
    """The session's last message, or None before the first one."""
    with session.lock:
        if not session.turns:
            return None
        turn = session.turns[-1]
        return LastMessage(str(turn.get("text") or ""), tuple(uploads_of(turn, session.workspace)))


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


def files_written(steps: list[Any]) -> list[str]:
    """The workspace files the given steps recorded writing, each once, in order."""
    return list(dict.fromkeys(path for step in steps if isinstance(step, ActionStep) for path in step.artifacts))


def refusal(session: Session, action: str) -> str | None:
    """Why `action` ("retry", "edit your last message") cannot happen now, or None (call with the lock)."""
    if session.closed_at is not None:
        return "This chat was closed here: reload the page to continue it."
    if session.running:
        if session.run is not None and session.run.waiting_decision is not None:
            return (f"The agent is waiting for your decision: answer it in the panel under the chat (or press "
                    f"Stop), then {action}.")
        return f"A run is going: wait for it to end (or press Stop), then {action}."
    if not session.turns:
        return f"There is no message to {action.split(' ')[0]} yet: send one first."
    return None


def rewind_last_turn(session: Session, settings: RunSettings, action: str = "retry") -> LastMessage:
    """Rewind `session` to before its last message (see the module's docstring) and return that message, to
    be sent again with `Session.start_run(..., kept=message.uploads)`. Raises RewindRefused, changing nothing,
    when a run is going, there is no message, or a needed new agent cannot be built."""
    stopping.finish_settling(session)  # a stopped run's agent is kept or replaced first
    with session.lock:
        why = refusal(session, action)
        if why is not None:
            raise RewindRefused(why)
        turns = list(session.turns)
        message = LastMessage(str(turns[-1].get("text") or ""), tuple(uploads_of(turns[-1], session.workspace)))
        memory = session.memory
        start = last_turn_start(memory, turns)
        if memory is not None and start is None:
            start = len(memory.steps)  # the last message's run left no step: every step is kept
        reuse = session.agent is not None and settings == session.agent_settings
    replacement = None
    if not reuse:  # built before anything changes, and outside the lock (loading a model may take a while)
        try:
            replacement = session.agent_factory(settings, session.workspace)
        except Exception as exc:
            raise RewindRefused(f"Could not start the agent ({for_visitor(exc, 'starting the agent')}). Nothing "
                                "was changed.") from None
    with session.lock:
        changed = refusal(session, action) or (None if session.turns == turns else
                                               "The chat changed meanwhile: look at it again, then retry.")
        if changed is not None:
            if replacement is not None:
                stopping.close_quietly(replacement)
            raise RewindRefused(changed)
        kept = memory_before(memory, start) if memory is not None else AgentMemory()
        undone = files_written(memory.steps[start:]) if memory is not None else []
        if replacement is not None:
            session._close_agent()
            session.use_agent(replacement, settings)
        else:
            restart = getattr(session.agent, "restart_sandbox", None)
            if restart is not None:
                restart()  # the undone answer's variables go with its worker
        session.hibernated = None
        transcript = Transcript(str(session.workspace), publish=session.publish)
        session.uploads = replay_memory(transcript, kept, turns[:-1], session.workspace)
        session.transcript, session.turns = transcript, turns[:-1]
        session.files_version += 1
        session.clock = []
        _install(session.agent, kept, transcript)
        if undone:
            names = ", ".join(f"`{name}`" for name in undone)
            transcript.add_note(f"Files the undone answer wrote stay in the workspace: {names}.")
        session.save_chat("rewind")  # on disk now: a reload shows the rewound chat even if the next run fails
    return message


def _install(agent: Any, kept: AgentMemory, transcript: Transcript) -> None:
    """Give the agent the kept memory; with code steps, rebuild their variables in its fresh sandbox."""
    if kept.steps:
        carry_memory_into(agent, kept, transcript, HEADLINE)
        return
    restore_agent_memory(agent, kept)
    transcript.add_note(f"{HEADLINE} The agent starts again from an empty memory and a fresh sandbox.")
