"""Stop that never loses the conversation, even when the agent does not confirm it.

Why: a stop used to wait 5 s for the agent's loop and then close the agent, memory and all (a stalled model
stream ignores the stop until its next piece). Now the run ends in the chat within `stop_grace` (see
ui/session/run_stream.py) and the steps so far are saved at once. The agent gets a while longer to confirm in the
background (`STOP_SETTLE_S`): if it does, the session keeps it, sandbox variables and all; if not (or the
person's next message cannot wait for it), it is closed and its memory goes to the next agent, whose sandbox
re-runs the recorded code (ui/saved/restore.py). The session's runs do this (`RunControl.abandon_run`); these
are the pieces they use that need no session.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from agents import events as ev
from agents.memory import AgentMemory, TaskStep
from agents.models.base import TokenUsage
from agents.step_events import run_usage
from ui.chat.render import Transcript
from ui.session.run_stream import END, Failure, RunHandle

STOP_SETTLE_S = 10.0  # how long an unconfirmed stop may still be confirmed in the background
STOP_WAIT_S = 3.0  # how long the next message waits for that before the agent is replaced
STOPPED_NOTE = ("⏹️ **Continuing after the stop**: the stopped agent was closed; its variables were rebuilt from "
                "the recorded steps.")
CLOSED_NOTE = ("The stopped agent did not finish its step, so it was closed. Nothing is lost: the steps so far "
               "are kept, and your next message continues this conversation.")


class StopSettler:
    """Waits in the background for the end of a run whose stop the agent has not confirmed yet: `confirmed()`
    if it ends within `settle_s`, else `unconfirmed()`. The session's next run waits `wait_s` more at most."""

    def __init__(self, settle_s: float = STOP_SETTLE_S, wait_s: float = STOP_WAIT_S) -> None:
        self.settle_s, self.wait_s = settle_s, wait_s  # tunable (tests)
        self._thread: threading.Thread | None = None

    @property
    def settling(self) -> bool:
        return self._thread is not None

    def start(self, run: RunHandle, confirmed: Callable[[], None], unconfirmed: Callable[[], None]) -> None:
        def settle() -> None:
            (confirmed if wait_for_end(run, self.settle_s) else unconfirmed)()

        self._thread = threading.Thread(target=settle, name="agentdeck-stop-settle", daemon=True)
        self._thread.start()

    def finish(self) -> bool:
        """Before the next run: wait for the settling a moment. True if the agent still did not confirm (the
        session replaces it: `unconfirmed` would come too late)."""
        thread, self._thread = self._thread, None
        if thread is None:
            return False
        thread.join(self.wait_s)
        return thread.is_alive()


def wait_for_end(run: RunHandle, seconds: float) -> bool:
    """Read a stopped run's remaining events (nobody shows them now) until it ends: True if it ended within
    `seconds`, False if the agent never confirmed the stop."""
    deadline = time.monotonic() + seconds
    while True:
        item = run.next_item(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
        if item is END or isinstance(item, Failure):
            return True
        if item is None and time.monotonic() >= deadline:
            return False


def snapshot_memory(memory: Any) -> Any:
    """A copy of `memory` that a run still going in another thread no longer changes, as the run was when
    stopped: its finished steps, the step it was acting recorded stopped, the run ended stopped
    (`AgentMemory.stopped_copy`), so a chat reopened from it shows the stopped step's code as the live chat did."""
    if memory is None:
        return None
    if isinstance(memory, AgentMemory):
        return memory.stopped_copy()
    copy = AgentMemory(memory.system_prompt.system_prompt)  # (tests' stand-in agents keep a plain memory)
    copy.steps = list(memory.steps)
    copy.rebuild_prompt()
    return copy


def stopped_event(transcript: Transcript, paused: Any = None) -> ev.RunFinished:
    """The end the chat shows for a run stopped without the agent's confirmation. `paused`: the memory of a run
    stopped while it waits for a decision (read before its pending request is dropped): the figures are then that
    run's own, as its memory holds them, not the chat's previous run's tokens nor the person's time to decide."""
    started = transcript.run_started or time.time()
    duration, tokens = max(0.0, time.time() - started), transcript.run_tokens or TokenUsage()
    figures = paused_run_figures(paused)
    if figures is not None:
        duration, tokens = figures
    return ev.RunFinished(run_id=transcript.top_run_id or "stopped", step=transcript.current_step,
                          state="interrupted", output=None, duration_s=duration, token_usage=tokens,
                          steps=transcript.current_step)


def paused_run_figures(memory: Any) -> tuple[float, TokenUsage] | None:
    """A paused run's working time and tokens: its task's recorded time (the waits for the person not counted, as
    the end of a finished run counts them), its steps' tokens and the paused step's reply. None if nothing waits."""
    pending = getattr(memory, "pending", None)
    if pending is None:
        return None
    starts = [i for i, s in enumerate(memory.steps) if isinstance(s, TaskStep)]  # a decision waits in the last run
    if not starts:
        return None
    task, steps = memory.steps[starts[-1]], memory.steps[starts[-1]:]  # as the run's own end counts them
    tokens = run_usage(steps) + TokenUsage(pending.reply_input_tokens, pending.reply_output_tokens)
    return task.duration_s or 0.0, tokens


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


def close_in_background(agent: Any) -> None:
    """`close_quietly` in a thread of its own: a stopped agent's close may wait for its loop."""
    threading.Thread(target=close_quietly, args=(agent,), name="agentdeck-close-stopped", daemon=True).start()
