"""A session's runs: starting one (at most one at a time), the approval mode it gets, the decision it is paused
on, its stop, and the drain that applies its events to the chat.

Kept apart from the session (ui/session/session.py), which composes it with its other parts and keeps the
tab's lifetime, Retry/Edit and the saved chat, because this is the run's own state and its rules: a second run
is refused (a message to a run waiting for an answer is that answer), a run ends once (`finished`), a decision
is answered once, the approval mode reaches an agent only between runs, and a stop the agent does not confirm
in time ends the run in the chat at once, keeping its memory (ui/session/stopping.py). It works on the
session's chat record and agent slot under the session's lock; handlers reach it through the session's
methods. It is what the drain delivers to (`run_stream.DrainTarget`).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from agents import events as ev
from agents.decisions import Decision
from agents.errors import ConfigurationError
from ui.agent_factory import run_arguments
from ui.session import run_stream, stopping
from ui.session.agent_slot import AgentSlot
from ui.session.chat_record import ChatRecord
from ui.session.pending_decisions import (
    WAITING_NOTE,
    apply_approval_mode,
    claim_for_resume,
    drop_pending,
    mark_shown,
    normalise_mode,
    open_request,
    pauses,
    saved_request,
)
from ui.session.run_stream import END, Failure, RunHandle
from ui.settings import RunSettings
from ui.uploads.images import images_for_model
from ui.uploads.intake import UploadResult, agent_task_text

BUSY_RUN_NOTE = "⏳ A run is still going: wait for it, or press Stop."


class RunControl:
    def __init__(self, lock: threading.RLock, record: ChatRecord, slot: AgentSlot, max_upload_bytes: int,
                 touch: Callable[[], None], save: Callable[..., bool]) -> None:
        self._lock, self._record, self._slot = lock, record, slot  # the session's lock and parts
        self._max_upload_bytes = max_upload_bytes
        self._touch = touch  # the session was active (the registry reaps idle ones)
        self._save = save  # the session's save of the chat on disk (`Session.save_chat`)
        self._run: RunHandle | None = None
        self._approval_mode = "autonomous"  # which pauses the next run makes
        self._stop = stopping.StopSettler()  # waits for a stopped run's end (`abandon_run`)

    @property
    def run(self) -> RunHandle | None:
        return self._run

    @property
    def running(self) -> bool:
        return self._run is not None and not self._run.finished

    def unfinished(self) -> bool:
        """A run goes on or waits for a decision, read as one view under the session's lock. Why: read in two
        steps (`running`, then `pending`), a decision answered in between (the paused run ended, the resumed one
        not yet started) looked like neither, and a watching tab stopped following the run it had just resumed."""
        with self._lock:
            return self.running or self.pending() is not None

    @property
    def paused(self) -> bool:
        """The run stopped at a decision (answered or not) and no drain has claimed it since."""
        return self._run is not None and self._run.waiting_decision is not None

    @property
    def approval_mode(self) -> str:
        return self._approval_mode

    @property
    def stop_settler(self) -> stopping.StopSettler:
        return self._stop

    # ----- starting ---------------------------------------------------------------------------------------
    def start(self, text: str, files: list[tuple[str, str]], settings: RunSettings,
              kept: Sequence[UploadResult] = ()) -> bool:
        """`Session.start_run`'s work, under the session's lock: add the person's message (and files) to the
        chat and start the agent in its own thread (a drain reads its events). False if nothing started."""
        with self._lock:
            if self.running or self.pending() is not None:  # a paused run has ended, but its decision waits
                if self.answer_question(text):  # the run waits for an answer: this is it
                    return True
                self._record.add_note(WAITING_NOTE if self.pending() is not None else BUSY_RUN_NOTE)
                return False
            results, earlier = self._record.take_message(text, files, self._max_upload_bytes, kept)
            good = [r for r in results if r.ok]
            if not text.strip() and not good:
                return False
            try:
                agent = self._slot.agent_for(settings, self._record.workspace, self._record.transcript)
                # This run's own settings (max steps, planning, approval mode, tools offered): nothing is rebuilt
                # for them, and the next run gets its own (ui/agent_factory.py `run_arguments`).
                run_settings = run_arguments(agent, settings, self._approval_mode)
            except Exception as exc:
                self._record.add_error("Could not start the agent", exc, "starting the agent")
                return False
            # A small model is told about the earlier messages' files again with each message.
            task = agent_task_text(text, results, getattr(agent, "prompt_templates", None), earlier)
            self._record.add_turn(task, text, good)
            self._save("start")  # the person's message is on disk before the agent starts
            self._record.transcript.finished = None
            images, notes = images_for_model(good, agent, self._record.files)
            for note in notes:
                self._record.add_note(note)
            # keeps its memory: reset=False
            pictures: dict[str, Any] = {"images": images} if images else {}
            self._run = RunHandle(agent.run(task, stream=True, reset=False, **pictures, **run_settings),
                                  pauses=pauses(agent))
            return True

    def set_approval_mode(self, mode: Any) -> None:
        """The approval mode of the next runs; the agent gets it now unless a run goes on."""
        with self._lock:
            self._approval_mode = normalise_mode(mode)
            if self._slot.agent is not None and not self.running:
                apply_approval_mode(self._slot.agent, self._approval_mode)

    # ----- the drain (ui/session/run_stream.py) and what it delivers ------------------------------------------
    def drain(self, min_interval: float, gather: float, heartbeat: float, stop_grace: float) -> Iterator[str]:
        """See `Session.drain`."""
        run = self._run
        if run is None:
            return
        run.waiting_decision = None
        yield from run_stream.drain(self, run, min_interval, gather, heartbeat, stop_grace)

    def touch(self) -> None:
        self._touch()

    def apply_item(self, run: RunHandle, item: Any) -> None:
        """One queued item of `run` (the drain's): an event for the chat, the stream's end, or its failure."""
        with self._lock:
            if item is END:
                if run.end() and self._record.transcript.finished is None:
                    self._record.add_note("⏹️ The run ended without a result.")
                return
            if isinstance(item, Failure):
                self._record.add_error("The agent crashed", item.error, "an agent run")
                return
            self._record.apply(item)
            run.follow(item)

    def save_run(self) -> bool:
        """The drain's save at a run's end or pause (see `Session.save_chat`)."""
        with self._lock:
            return self._save("run")

    def abandon_run(self, run: RunHandle) -> None:
        """The agent did not confirm the stop within the grace period: end the run in the chat now, save the
        steps so far, and let the agent confirm in the background (ui/session/stopping.py)."""
        with self._lock:
            if run.finished or run is not self._run:
                return
            run.finished = True
            agent = self._slot.agent
            self._record.apply(stopping.stopped_event(self._record.transcript))
            try:
                self._save("run", memory=stopping.snapshot_memory(getattr(agent, "memory", None)))
            finally:
                run.end_saved.set()
        if agent is not None:
            self._stop.start(run, confirmed=lambda: self._keep_stopped(agent),
                             unconfirmed=lambda: self._replace_agent(agent))

    def _keep_stopped(self, agent: Any) -> None:
        """The stopped agent confirmed: it stays, and the chat is saved with its stopped step as it recorded it."""
        with self._lock:
            if self._slot.agent is agent:
                self._save("run", announce=False)

    def _replace_agent(self, agent: Any) -> None:
        """Close `agent` (in the background) and keep its memory for the session's next agent."""
        with self._lock:
            if self._slot.replace(agent):
                self._record.add_note(stopping.CLOSED_NOTE)

    # ----- a paused run ------------------------------------------------------------------------------------
    def pending(self, shown_at: float = 0.0) -> ev.DecisionRequested | None:
        """The decision the run is paused on and nobody has answered yet, else None. With `shown_at`, a page
        shows it then: its first showing is when the person's time to decide starts (`mark_shown`)."""
        with self._lock:
            live = open_request(self._run, self._slot.agent)
            request = live if live is not None or self.running else \
                saved_request(self._slot.agent, self._slot.kept_memory)
            if request is not None and shown_at:
                mark_shown(self._slot.agent, self._slot.memory, request.request_id, shown_at)
            return request

    def answer(self, request: ev.DecisionRequested, decision: Decision) -> None:
        """Answer `request`, once. ConfigurationError if it was answered already or its run is gone."""
        with self._lock:
            run, agent = self._run, self._slot.agent
            settings = self._slot.settings
            if not self.running and agent is None and settings is not None \
                    and getattr(self._slot.kept_memory, "pending", None) is not None:
                agent = self._slot.agent_for(settings, self._record.workspace, self._record.transcript)
            if not self.running and agent is not None and getattr(agent.memory, "pending", None) is not None \
                    and agent.memory.pending.request_id == request.request_id and not agent.memory.pending.taken_at:
                self._resume_saved(agent, request, decision)
                self._touch()
                return
            if run is None or agent is None or run.answered == request.request_id:
                raise ConfigurationError("This decision was already made.")  # e.g. two quick clicks
            agent.resolve_decision(request.request_id, decision)
            run.answered = request.request_id
        self._touch()

    def _resume_saved(self, agent: Any, request: ev.DecisionRequested, decision: Decision) -> None:
        """The run ended at `request` (pause mode), in this process or in the one that saved the chat (another
        replica, or before a restart): the answer resumes it (`agent.resume`, agents/decisions/pending.py) as
        a new stream the panel's resume drains."""
        self._take(agent.memory.pending, decision)
        before = stopping.paused_run_figures(agent.memory)  # the run's time before the pause
        stream = agent.resume(decision, stream=True)  # refuses a decision that does not fit, nothing changed
        self._record.transcript.finished = None
        if before is not None:  # the running line counts as the end will: the time to decide is not the run's
            self._record.transcript.run_started = time.time() - before[0]
        self._record.transcript.resumed_request(request)  # a reopened chat shows the decision as it is made
        self._run = RunHandle(stream, pauses=pauses(agent))
        self._run.waiting_decision, self._run.answered = request, request.request_id  # claimed by the next drain

    def _take(self, pending: Any, decision: Decision) -> None:
        """Save the chat with its pending request marked taken before the resumed step acts (at most once: a
        crash after its code ran but before its save leaves the request taken, and the reopened chat does not
        offer it again, `settle_taken`). The save writes over the memory version this session read, so a chat
        saved meanwhile elsewhere refuses it. ConfigurationError, nothing run, when the decision does not fit
        or the save fails."""
        decision.validate_for(pending.request())
        pending.taken_at = time.time()
        if not self._save("step", announce=False):
            pending.taken_at = 0.0
            raise ConfigurationError("This decision could not be recorded as made (the chat could not be saved, or "
                                     "it was saved meanwhile in another tab or server), so nothing ran. Reopen "
                                     "the chat to see it as it is now.")

    def answer_question(self, text: str) -> bool:
        """If the run waits for an answer to `ask_user`, `text` is that answer: resolve it. True if it was."""
        request = self.pending()
        if request is None or request.request_kind != "question" or not text.strip():
            return False
        with self._lock:
            self._record.transcript.add_answer(request.request_id, text)  # at once; its DecisionMade finds it shown
        self.answer(request, Decision.reply(text))
        return True

    def answered_elsewhere(self, request_id: str) -> bool:
        """The paused run's decision `request_id` was made on another replica, which holds the chat now: the agent
        here, whose memory still holds the request, is closed (the chat as saved there is the truth; the next
        agent is built from it). False, nothing changed, if a run goes on here or it waits for another request."""
        with self._lock:
            waiting = self.pending()
            if self.running or waiting is None or waiting.request_id != request_id:
                return False
            if self._run is not None:
                self._run.waiting_decision = None
            self._slot.close()
            return True

    def claim_paused(self) -> bool:
        """Claim a paused run whose decision was answered (or that was stopped) for a new drain: True once."""
        with self._lock:
            return claim_for_resume(self._run)

    # ----- stopping and the end ----------------------------------------------------------------------------
    def interrupt(self) -> bool:
        """Stop the run at once (the agent stops its sandbox code), or end the run paused at a decision. False
        if no run goes on or waits."""
        with self._lock:
            run, agent = self._run, self._slot.agent
            if not self.running and self.pending() is not None:
                return self._stop_paused()
            if run is None or run.finished or agent is None:
                return False
            run.stop_requested_at = time.time()
        agent.interrupt()
        run.wake()  # the drain checks at once whether the run ended, instead of at its next heartbeat
        return True

    def _stop_paused(self) -> bool:
        """Stop on a run that ended at a decision (nothing runs): its pending request is dropped, its run recorded
        as stopped, and the chat shows and saves that end, as a stopped live run's."""
        memory = getattr(self._slot.agent, "memory", None) if self._slot.agent is not None else \
            self._slot.kept_memory
        stopped = stopping.stopped_event(self._record.transcript, paused=memory)  # before its request is dropped
        if not drop_pending(memory):
            return False
        if self._run is not None:
            self._run.waiting_decision = None
        self._record.transcript.end_waiting()
        self._record.apply(stopped)
        self._save("run")
        self._touch()
        return True

    def settle_stop(self) -> None:
        """Before a run or a rewind: a stopped run's agent that did not confirm in time is replaced first
        (its memory goes to the next agent)."""
        if self._stop.finish():
            self._replace_agent(self._slot.agent)

    def end(self) -> bool:
        """The session closes: a run still going ends now. True if there was one (under the session's lock);
        the caller saves it, then calls `end_saved`."""
        run = self._run
        if run is None or run.finished:
            return False
        run.finished = True
        return True

    def end_saved(self) -> None:
        """The run's end is on disk (after `end`): whoever waits to read the saved chat may now."""
        if self._run is not None and self._run.finished:
            self._run.end_saved.set()

    def clear(self) -> None:
        """New chat: any run ends and is forgotten (under the session's lock); it has no end to save."""
        if self._run is not None:
            self._run.finished = True
            self._run.end_saved.set()
        self._run = None
