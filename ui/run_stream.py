"""A run's events on their way to the chat: a pump thread reads the agent's event stream into a queue, and
`drain` applies what is queued to the session's transcript, yielding whenever there is something new to show.

Kept apart from the session because this is the streaming policy (how long to gather a burst, how often to
update, the heartbeat, giving up on a stop the agent does not confirm), while ui/sessions.py is what a
session holds. A drain ends when the run finishes or asks for a decision (DecisionRequested); after the
decision is resolved a new drain picks up the same queue.
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

from agents import events as ev

if TYPE_CHECKING:
    from ui.sessions import Session

END = object()  # the stream is over


@dataclass
class Failure:
    """The agent's event stream raised: shown in the chat instead of hanging."""
    error: BaseException


class RunHandle:
    """One run's event stream, read by a pump thread into a queue so a drain can wait with a timeout."""

    def __init__(self, stream: Iterator[ev.Event]) -> None:
        self.queue: queue.Queue = queue.Queue()
        self.finished = False  # RunFinished (or the end of the stream) has been applied
        self.waiting_decision: ev.DecisionRequested | None = None
        self.stop_requested_at: float | None = None
        self.answered: str | None = None  # the id of the decision a person answered (ui/pending_decisions.py)
        self._thread = threading.Thread(target=self._pump, args=(stream,), name="agentdeck-pump", daemon=True)
        self._thread.start()

    def _pump(self, stream: Iterator[ev.Event]) -> None:
        try:
            for event in stream:
                self.queue.put(event)
        except BaseException as exc:  # the loop itself failed: show it rather than hang
            self.queue.put(Failure(exc))
        finally:
            self.queue.put(END)


def drain(session: "Session", run: RunHandle, min_interval: float, gather: float, heartbeat: float,
          stop_grace: float) -> Iterator[str]:
    """Apply `run`'s events to `session`, yielding after each batch (and every `heartbeat` seconds)."""
    last_yield = 0.0
    while not run.finished:
        try:
            item = run.queue.get(timeout=heartbeat)
        except queue.Empty:
            session.touch()
            if run.stop_requested_at and time.time() - run.stop_requested_at > stop_grace:
                session.abandon_run(run)
            yield "heartbeat"
            continue
        # Let the rest of a burst arrive (a step's end, the next step's start, streamed text), then show it
        # in one update: at least `gather` seconds, and never more than one update per `min_interval`.
        time.sleep(max(gather, min_interval - (time.time() - last_yield)))
        batch = [item]
        while True:
            try:
                batch.append(run.queue.get_nowait())
            except queue.Empty:
                break
        with session.lock:
            for item in batch:
                apply(session, run, item)
                if run.finished or run.waiting_decision is not None:
                    break
        session.touch()
        last_yield = time.time()
        if not run.finished and run.waiting_decision is None:
            yield "events"
            continue
        # The run ended or waits for a person: show that first, then keep the chat on disk (the save takes a
        # while; it also happens if the page goes away at this point).
        try:
            yield "events"
        finally:
            with session.lock:
                session.save_chat("run")
        return


def apply(session: "Session", run: RunHandle, item: Any) -> None:
    """One queued item: an event for the transcript, the stream's end, or its failure."""
    if item is END:
        if not run.finished:
            run.finished = True
            if session.transcript.finished is None:
                session.transcript.add_note("⏹️ The run ended without a result.")
        return
    if isinstance(item, Failure):
        session.transcript.add_note(f'<span class="ad-error">The agent crashed</span> '
                                    f"{type(item.error).__name__}: {item.error}")
        return
    before = len(session.transcript.files)
    session.transcript.apply(item)
    if len(session.transcript.files) != before:
        session.files_version += 1
    if isinstance(item, (ev.StepStarted, ev.StepFinished, ev.FinalAnswer, ev.RunFinished)):
        session.clock.append([item.kind, item.step, item.parent_id, item.timestamp])
    if isinstance(item, ev.RunFinished) and item.parent_id is None:
        run.finished = True
    elif isinstance(item, ev.DecisionRequested):
        run.waiting_decision = item
