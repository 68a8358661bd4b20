"""A run's events on their way to the chat: `drain` reads the agent's event stream (with a timeout, for the
heartbeat) and applies what came to the session's transcript, yielding whenever there is something new to show.

Kept apart from the session because this is the streaming policy (how long to gather a burst, how often to
update, the heartbeat, giving up on a stop the agent does not confirm), while ui/session/run_control.py is what
a session's run holds. A drain ends when the run finishes or asks for a decision. The app's agents pause
(`pause_on_decision`, agents/decisions/pending.py): at a decision the run ends, so the drain reads on to that end
(the pending record is in memory by then) and the chat is saved with it; no thread waits, and the answer starts
a resumed run, here or on another replica. A decision asked inside a managed agent still waits in the run's thread:
the drain stops at its DecisionRequested and a new drain picks up the same stream once it is resolved.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from agents import events as ev
from agents.loop.event_stream import EventStream

END = object()  # the stream is over

# The streaming policy's defaults, read when a drain starts (tests that wait through a heartbeat or a stop's grace
# shorten them rather than sleep through them).
MIN_INTERVAL_S = 0.05  # at most one update per this long
GATHER_S = 0.02  # how long a burst of events is gathered into one update
HEARTBEAT_S = 1.0  # an update this often while nothing happens (the page knows the run is alive)
STOP_GRACE_S = 0.6  # how long a stop may go unconfirmed before the drain ends the run itself


@dataclass
class Failure:
    """The agent's event stream raised: shown in the chat instead of hanging."""
    error: BaseException


class RunHandle:
    """One run's event stream and what the UI knows of it (finished, waiting for a decision, stop asked)."""

    def __init__(self, stream: EventStream, pauses: bool = False) -> None:
        self.stream = stream
        #: The agent ends a top-level run at a decision (pause mode): its stream ends, no thread waits.
        self.pauses = pauses
        self.finished = False  # RunFinished (or the end of the stream) has been applied
        self.waiting_decision: ev.DecisionRequested | None = None
        self.ending = False  # the decision asked ends the run (pause mode): the drain reads on to its end
        self.stop_requested_at: float | None = None
        self.answered: str | None = None  # the id of the decision a person answered (Session.resolve)
        self.drainer: object | None = None  # the drain that reads the stream now (a re-attached page takes over)
        # Set once the run's end is on disk (or there is no end to save: New chat). The run is `finished` before
        # that (the end is shown first, then saved): a reader of the saved chat waits for this, or it reads the
        # chat without its end (ui/panels/watch.py).
        self.end_saved = threading.Event()

    def end(self) -> bool:
        """The stream is over: True if that ends the run now (no RunFinished ended it before)."""
        if self.finished:
            return False
        self.finished = True
        return True

    def follow(self, event: ev.Event) -> None:
        """What an event shown in the chat says of the run: the top-level RunFinished ends it (a paused one
        too: its decision stays `waiting_decision`), a DecisionRequested pauses it (the drain stops there, or
        at the run's end when the run pauses by ending)."""
        if isinstance(event, ev.RunFinished) and event.parent_id is None:
            self.finished = True
        elif isinstance(event, ev.DecisionRequested):
            self.waiting_decision = event
            self.ending = self.pauses  # a managed agent's decision ends its manager's run too

    @property
    def held(self) -> bool:
        """The drain stops here: the run ended (maybe paused), or it waits for a person in its thread."""
        return self.finished or (self.waiting_decision is not None and not self.ending)

    @property
    def ended_paused(self) -> bool:
        """The run ended at a decision (pause mode): nothing runs, its memory holds the pending request."""
        return self.finished and self.ending and self.waiting_decision is not None

    def wake(self) -> None:
        """Make the drain look at the run now (a stop was asked)."""
        wake = getattr(self.stream, "wake", None)
        if wake is not None:
            wake()

    def wait_for(self, heartbeat: float, stop_grace: float) -> float:
        """How long the drain may wait for the next event: a heartbeat, or less when a stop is due."""
        if self.stop_requested_at is None:
            return heartbeat
        return max(0.0, min(heartbeat, self.stop_requested_at + stop_grace - time.time()))

    def next_item(self, timeout: float | None) -> Any:
        """The next event, END, a Failure, or None if nothing came within `timeout` (0: do not wait)."""
        try:
            if timeout == 0:
                return self.stream.get_nowait()
            return self.stream.get(timeout=timeout)
        except StopIteration:
            return END
        except BaseException as exc:  # the loop itself failed: show it rather than hang
            return Failure(exc)


def burst_deadline(made: float | None, now: float, last_yield: float, gather: float, min_interval: float) -> float:
    """When to show a burst whose first event was made at `made` (None: now): `gather` seconds after it, and
    not within `min_interval` of the last update; never later than `gather` from now."""
    start = now if made is None else min(made, now)
    return min(max(start + gather, last_yield + min_interval), now + gather)


class DrainTarget(Protocol):
    """What a drain asks of the run it reads (ui/session/run_control.py's RunControl, a session's part)."""

    def touch(self) -> None: ...

    def apply_item(self, run: RunHandle, item: Any) -> None:
        """Apply one queued item (an event, END or a Failure) under the session's lock."""

    def abandon_run(self, run: RunHandle) -> None:
        """End a run whose stop the agent did not confirm in time, keeping its memory."""

    def save_run(self) -> bool:
        """Keep the chat on disk at the run's end or pause; False if that failed."""


def drain(session: DrainTarget, run: RunHandle, min_interval: float, gather: float, heartbeat: float,
          stop_grace: float) -> Iterator[str]:
    """Apply `run`'s events to `session`, yielding after each batch (and every `heartbeat` seconds).

    A stop the agent has not confirmed within `stop_grace` seconds ends the run here, keeping its memory
    (RunControl.abandon_run). Returns when another drain (a re-attached page) takes the run over."""
    last_yield = 0.0
    me = run.drainer = object()
    while not run.finished:
        item = run.next_item(timeout=run.wait_for(heartbeat, stop_grace))
        if run.drainer is not me:  # a reloaded page drains this run now
            if item is not None:
                session.apply_item(run, item)
            return
        if item is None:
            session.touch()
            if run.stop_requested_at and time.time() - run.stop_requested_at >= stop_grace:
                session.abandon_run(run)
                if run.finished:
                    yield "events"
                    return
            yield "heartbeat"
            continue
        # Show a burst (a step's end, the next step's start, streamed text) in one update: gather until `gather`
        # seconds after its first event was made, and never more than one update per `min_interval`. Counting
        # from the event's own time, not from when the drain got to it: time it waited while the previous
        # update went out is part of the window, not added to it. Each event is applied as it arrives, so
        # the work (publishing a chart, say) is done within the window, not after it.
        deadline = burst_deadline(getattr(item, "timestamp", None), time.time(), last_yield, gather, min_interval)
        while True:
            session.apply_item(run, item)
            if run.held:
                break
            item = run.next_item(timeout=max(0.0, deadline - time.time()))
            if item is None:
                break
        session.touch()
        last_yield = time.time()
        if not run.held:
            yield "events"
            continue
        # The run ended or waits for a person: show that first, then keep the chat on disk (the save takes a
        # while; it also happens if the page goes away at this point). A failed save is shown at once.
        saved = True
        try:
            yield "events"
        finally:
            try:
                saved = session.save_run()
            finally:
                if run.finished:
                    run.end_saved.set()
        if not saved:
            yield "events"
        return
