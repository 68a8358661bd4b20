"""Stop that never loses the conversation, even when the agent does not confirm it.

Why: a stop used to wait 5 s for the agent's loop and then close the agent, memory and all (a stalled model
stream ignores the stop until its next piece). Now the run ends in the chat within `stop_grace` (see
ui/session/run_stream.py) and the steps so far are saved at once. The agent gets a while longer to confirm in the
background (`STOP_SETTLE_S`): if it does, the session keeps it, sandbox variables and all; if not (or the
person's next message cannot wait for it), it is closed and its memory goes to the next agent, whose sandbox
re-runs the recorded code (ui/saved/restore.py).
"""
from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from agents import events as ev
from agents.memory import AgentMemory
from agents.models.base import TokenUsage
from ui.chat.render import Transcript
from ui.session.run_stream import END, Failure, RunHandle

if TYPE_CHECKING:
    from ui.session.session import Session

STOP_SETTLE_S = 10.0  # how long an unconfirmed stop may still be confirmed in the background
STOP_WAIT_S = 3.0  # how long the next message waits for that before the agent is replaced
STOPPED_NOTE = ("⏹️ **Continuing after the stop**: the stopped agent was closed; its variables were rebuilt from "
                "the recorded steps.")
CLOSED_NOTE = ("The stopped agent did not finish its step, so it was closed. Nothing is lost: the steps so far "
               "are kept, and your next message continues this conversation.")


def abandon_run(session: Session, run: RunHandle) -> None:
    """The agent did not confirm the stop within the grace period: end the run in the chat now, save the
    steps so far, and let the agent confirm in the background."""
    with session.lock:
        if run.finished or run is not session.run:
            return
        run.finished = True
        agent = session.agent
        session.transcript.apply(stopped_event(session.transcript))
        session.save_chat("run", memory=snapshot_memory(getattr(agent, "memory", None)))
        if agent is None:
            return
        settler = threading.Thread(target=_settle, args=(session, run, agent), name="agentdeck-stop-settle",
                                   daemon=True)
        session.settling = settler
    settler.start()


def _settle(session: Session, run: RunHandle, agent: Any) -> None:
    """Wait (in the background) for the stopped run's end; keep the agent if it comes, else replace it."""
    deadline = time.monotonic() + session.stop_settle_s
    while True:
        item = run.next_item(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
        if item is END or isinstance(item, Failure):
            with session.lock:
                if session.agent is agent:
                    session.save_chat("run", announce=False)  # with the stopped step, as the agent recorded it
            return
        if item is None and time.monotonic() >= deadline:
            replace_agent(session, agent)
            return


def finish_settling(session: Session) -> None:
    """Before a new run: give a stopped run a moment to confirm, else replace its agent (memory kept)."""
    settler = session.settling
    if settler is None:
        return
    settler.join(session.stop_wait_s)
    session.settling = None
    if settler.is_alive():
        agent = session.agent
        if agent is not None:
            replace_agent(session, agent)


def replace_agent(session: Session, agent: Any) -> None:
    """Close `agent` (in the background) and keep its memory for the session's next agent."""
    with session.lock:
        if session.agent is not agent:
            return
        session.hibernated = snapshot_memory(agent.memory)
        session.hibernated_why = STOPPED_NOTE
        session.agent, session.agent_settings = None, None
        session.transcript.add_note(CLOSED_NOTE)
    threading.Thread(target=close_quietly, args=(agent,), name="agentdeck-close-stopped", daemon=True).start()


def snapshot_memory(memory: Any) -> Any:
    """A copy of `memory` that a run still going in another thread no longer changes (same finished steps)."""
    if memory is None:
        return None
    copy = AgentMemory(memory.system_prompt.system_prompt)
    copy.steps = list(memory.steps)
    copy.rebuild_prompt()
    return copy


def stopped_event(transcript: Transcript) -> ev.RunFinished:
    """The end the chat shows for a run stopped without the agent's confirmation."""
    started = transcript.run_started or time.time()
    return ev.RunFinished(run_id=transcript.top_run_id or "stopped", step=transcript.current_step,
                          state="interrupted", output=None, duration_s=max(0.0, time.time() - started),
                          token_usage=transcript.run_tokens or TokenUsage(), steps=transcript.current_step)


def close_quietly(agent: Any) -> None:
    """Stop and close an agent that is no longer used; its failures concern nobody now."""
    try:
        agent.interrupt()
    except Exception:
        pass
    try:
        agent.close()
    except Exception:
        pass
