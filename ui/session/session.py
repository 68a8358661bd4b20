"""One browser tab's session: its agent (memory + sandbox), its run, and the record of its conversation.

The session owns its state: handlers and panels read its properties and change it only through its methods,
which keep these invariants:
- one run at a time: `start_run` refuses a second (a message to a run waiting for an answer is that answer);
- the agent and the part of the settings it was built with change together (a new model or agent type: a new
  agent; new imports: a new sandbox; the rest goes to each run and builds nothing: ui/session/agent_slot.py), and
  the memory of an agent that is closed (a new model, a sandbox closed to make room, a stop the agent did not
  confirm) goes to the next one;
- a saved chat is kept on disk with each message, step, pause and run end;
- a closed session starts nothing.
Its parts share its lock: `session.record`, what the person sees and what is saved (ui/session/chat_record.py);
the AgentSlot, the agent, its settings and the memory kept for the next one (ui/session/agent_slot.py); the
RunControl, its runs (ui/session/run_control.py): started by `start_run`, their events applied by `drain`
(policy in ui/session/run_stream.py), a pause answered (`pending_request`, `resolve`, `claim_paused_run`), a
stop (`interrupt`, ui/session/stopping.py). The run lives here, not in a web worker, so the streaming handler
can return while the run waits for a person. `rewind_last_turn` undoes the last message for Retry and Edit
(ui/session/rewind.py); all live sessions are kept by ui/session/registry.py.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from agents import events as ev
from agents.decisions import Decision
from ui.chat.formatting import for_visitor
from ui.saved.store import SavedChat
from ui.session import rewind, run_stream, stopping
from ui.session.agent_slot import AgentFactory, AgentSlot
from ui.session.chat_record import ChatRecord
from ui.session.rewind import LastMessage
from ui.session.run_control import RunControl
from ui.session.run_stream import RunHandle
from ui.session.sandbox_keep import SandboxKeeper
from ui.session.session_reopen import ReopenedChat
from ui.session.title_job import TitleWriter
from ui.session.workspace_files import FileRemovalError
from ui.settings import RunSettings
from ui.uploads.intake import UploadResult

#: How long New chat waits for the run that just ended to be saved with its end (the drain's save).
RESET_SAVE_WAIT_S = 10.0


class Session(ReopenedChat):
    def __init__(self, key: str, root: Path, agent_factory: AgentFactory, max_upload_bytes: int,
                 saved: SavedChat | None = None) -> None:
        self._key = key
        self.lock = threading.RLock()  # hold it to read several properties as one consistent view
        self._record = ChatRecord(root, self.lock, saved)
        # The chat's sandbox across replicas: its id recorded, attached on reopen (ui/session/sandbox_keep.py).
        self._keeper = SandboxKeeper(lambda: self._record.saved)
        self._slot = AgentSlot(lambda settings, workspace: self._keeper.prepare(agent_factory(settings, workspace)),
                               on_step=self._save_step)  # the agent, its settings, kept memory
        self._record.use_host(self._sandbox_host)  # its files through the sandbox's own operations
        # Its runs: starting one, the approval mode, a pause, a stop, and the drain.
        self._runs = RunControl(self.lock, self._record, self._slot, max_upload_bytes, touch=self.touch,
                                save=self.save_chat)
        self._last_active = time.time()
        self._closed_at: float | None = None
        self._detached_at: float | None = None  # when the page went away while a run went on
        self._handed_over = False  # moved to another tab whose page has not started draining its run yet
        self._refused: str | None = None  # why the last message was not sent (the chat is open in another tab)
        self._titles = TitleWriter(on_tokens=self._title_tokens)  # the model's title for the chat

    # ----- what others read ----------------------------------------------------------------------------
    @property
    def key(self) -> str:
        """The tab's session hash (a reloaded tab takes the session under its new one: `hand_over`)."""
        return self._key

    @property
    def record(self) -> ChatRecord:
        """The chat, the files and the saved chat (ui/session/chat_record.py)."""
        return self._record

    @property
    def agent(self) -> Any:
        return self._slot.agent

    @property
    def agent_settings(self) -> RunSettings | None:
        return self._slot.settings

    @property
    def run(self) -> RunHandle | None:
        return self._runs.run

    @property
    def running(self) -> bool:
        return self._runs.running

    def _sandbox_host(self) -> Any:
        """The live sandbox host of the agent, without starting one (None: the workspace folder is the truth)."""
        sandbox = getattr(self._slot.agent, "live_sandbox", None)
        return getattr(sandbox, "host", None)

    @property
    def holds_sandbox(self) -> bool:
        return self._slot.agent is not None

    @property
    def memory(self) -> Any:
        """The conversation so far: the live agent's memory, or the one kept for the next agent."""
        return self._slot.memory

    @property
    def approval_mode(self) -> str:
        return self._runs.approval_mode

    @property
    def last_active(self) -> float:
        return self._last_active

    @property
    def closed_at(self) -> float | None:
        return self._closed_at

    @property
    def detached_at(self) -> float | None:
        return self._detached_at

    @property
    def refused(self) -> str | None:
        return self._refused

    @property
    def stop_settler(self) -> stopping.StopSettler:
        """Whether a stopped run's agent may still confirm the stop in the background (and its timings)."""
        return self._runs.stop_settler

    def touch(self, now: float | None = None) -> None:
        self._last_active = time.time() if now is None else now

    def record_refusal(self, reason: str | None) -> None:
        """Why the person's last message was not sent (None: it was); the chat says so."""
        with self.lock:
            self._refused = reason
            if reason is not None:
                self._record.add_note(reason)

    def remove_file(self, relative: str) -> str:
        """Delete a listed workspace file (given relative to the workspace), not while a run goes on."""
        with self.lock:
            if self.running:
                raise FileRemovalError("A run is going: wait for it to finish (or press Stop) before deleting files.")
            return self._record.remove_file(relative)

    # ----- runs ----------------------------------------------------------------------------------------
    def start_run(self, text: str, files: list[tuple[str, str]], settings: RunSettings,
                  kept: Sequence[UploadResult] = ()) -> bool:
        """Add the person's message (and files) to the chat and start the agent. False if nothing started.
        `kept`: uploads already in the workspace that go with the message again (a resent message's)."""
        self.touch()
        self._runs.settle_stop()
        with self.lock:
            if self._closed_at is not None:
                raise RuntimeError("This session was closed.")
            return self._runs.start(text, files, settings, kept)

    # ----- rewinding (Retry, Edit and resend: ui/session/rewind.py) -------------------------------------
    def rewind_refusal(self, action: str) -> str | None:
        """Why `action` ("retry", "edit your last message") cannot happen now, or None."""
        with self.lock:
            return rewind.refusal(self._closed_at is not None, self.running, self._runs.paused,
                                  bool(self._record.turns), action)

    def last_message(self) -> LastMessage | None:
        """What the person sent last (its text and uploads), for Edit; None before the first message."""
        with self.lock:
            turns = self._record.turns
            return rewind.message_of(turns[-1], self._record.files) if turns else None

    def rewind_last_turn(self, settings: RunSettings, action: str = "retry") -> LastMessage:
        """Retry / Edit: the conversation as it was before the last message (memory, chat, variables rebuilt,
        saved at once), and that message, to send again with `start_run(..., kept=message.uploads)`.

        The agent is kept when `settings` are its own (its sandbox restarted), else a new one is built before
        anything changes. Raises RewindRefused, changing nothing, when a run is going, there is no message yet,
        or that new agent cannot be built."""
        self._runs.settle_stop()
        with self.lock:
            why = self.rewind_refusal(action)
            if why is not None:
                raise rewind.RewindRefused(why)
            turns, memory = self._record.turns, self.memory
            reuse = self._slot.built_with(settings)
        replacement = None
        if not reuse:  # built before anything changes, outside the lock (loading a model may take a while)
            try:
                replacement = self._slot.build(settings, self._record.workspace)
            except Exception as exc:
                raise rewind.RewindRefused(f"Could not start the agent ({for_visitor(exc, 'starting the agent')}). "
                                           "Nothing was changed.") from None
        with self.lock:
            changed = self.rewind_refusal(action)
            if changed is None and (self._record.turns != turns or (replacement is None and self._slot.agent is None)):
                changed = "The chat changed meanwhile (or its sandbox was closed to make room): try again."
            if changed is not None:
                if replacement is not None:
                    stopping.close_quietly(replacement)
                raise rewind.RewindRefused(changed)
            self._slot.renew(replacement, settings)  # the agent gets the kept memory now, not at its next run
            kept, undone = rewind.before_last_turn(memory, turns)
            self._record.rewind_to(kept, turns[:-1], self._slot.agent, undone)
            self.save_chat("rewind")  # on disk now: a reload shows the rewound chat even if the next run fails
        return rewind.message_of(turns[-1], self._record.files)

    def use_agent(self, agent: Any, settings: RunSettings | None) -> None:
        """Make `agent` (built with `settings`) this session's; each step it finishes is saved at once (a crash
        loses at most the step in progress)."""
        with self.lock:
            self._slot.use(self._keeper.prepare(agent), settings)

    def _save_step(self, step: Any, agent: Any) -> None:
        """A step callback, in the agent's thread: the memory is complete and nobody else changes it now. The
        chat is not touched from here: the drain notes the outcome with the step's end (StepFinished)."""
        if agent is self._slot.agent and self._record.saved is not None:
            self.save_chat("step", announce=False)

    def drain(self) -> Iterator[str]:
        """Apply the run's events to the transcript, yielding after each batch (and every heartbeat), with the
        timings of ui/session/run_stream.py (read now, so a test can shorten them).

        Ends when the run has finished, or after a DecisionRequested (the run waits for a person; call
        drain again once the decision is resolved).
        """
        return self._runs.drain(run_stream.MIN_INTERVAL_S, run_stream.GATHER_S, run_stream.HEARTBEAT_S,
                                run_stream.STOP_GRACE_S)

    def hibernate(self) -> bool:
        """Close the idle agent and its sandbox, keeping its memory for the next message. False if busy."""
        with self.lock:
            if self._slot.agent is None or self.running or self._runs.pending() is not None:  # a paused run
                return False  # keeps its agent: the answer resumes it here (its settings go with a closed agent)
            self._slot.hibernate()
            return True

    # ----- a paused run ----------------------------------------------------------------------------------
    def set_approval_mode(self, mode: Any) -> None:
        """The approval mode of this session's next runs (None leaves it as it is)."""
        if mode is not None:
            self._runs.set_approval_mode(mode)

    def pending_request(self) -> ev.DecisionRequested | None:
        """The decision the run is paused on and nobody has answered yet, else None."""
        return self._runs.pending()

    def pending_shown(self) -> ev.DecisionRequested | None:
        """`pending_request`, for a page that shows it now: the person's time to decide counts from its first
        showing, whichever tab showed it (RunControl.pending)."""
        return self._runs.pending(shown_at=time.time())

    def has_pending(self) -> bool:
        return self.pending_request() is not None

    def unfinished(self) -> bool:
        """A run goes on or waits for a decision (one consistent reading: RunControl.unfinished)."""
        return self._runs.unfinished()

    def resolve(self, request: ev.DecisionRequested, decision: Decision) -> None:
        """Answer `request`. ConfigurationError if it expired. The chat shows the decision (and an edit) from
        the run's DecisionMade event, as a reopened chat does (ui/chat/render_decisions.py)."""
        self._runs.answer(request, decision)

    def was_answered(self, request_id: Any) -> bool:
        """The decision `request_id` was answered (here, in another tab, or by the API), so its run goes on; False
        for one a Stop dropped, or one never asked here. A tab that showed it says it was made elsewhere only then:
        a Stop was announced as "made in another tab: the run goes on" over a chat that says "Stopped"."""
        run = self._runs.run
        return isinstance(request_id, str) and run is not None and run.answered == request_id

    def claim_paused_run(self) -> bool:
        """Claim a paused run whose decision was answered (or that was stopped) for a new drain: True once."""
        return self._runs.claim_paused()

    # ----- stopping ------------------------------------------------------------------------------------
    def interrupt(self) -> bool:
        """Stop the run at once (the agent stops its sandbox code). The session stays usable. A stop the agent
        does not confirm in time ends the run anyway, its memory kept (`RunControl.abandon_run`)."""
        self.touch()
        return self._runs.interrupt()

    # ----- saving ----------------------------------------------------------------------------------------
    def save_chat(self, reason: str, announce: bool = True, memory: Any = None) -> bool:
        """Keep a saved chat on disk: the person's message when sent ("start"), each finished step ("step"), at
        a pause and at the run's end ("run"). A failure is noted in the chat (at once with `announce`, else by
        the drain with the step's end); the older save stays as it was. `memory`: this one instead of the
        session's. False if it failed."""
        ok = self._record.save(reason, memory if memory is not None else self.memory, self._slot.settings,
                               announce)
        if ok:
            self._keeper.note(self._slot.agent)
        if ok and reason == "run" and self._closed_at is None:
            self._ask_for_title()
        return ok

    @property
    def titles(self) -> TitleWriter:
        """The chat's title asked of its model after a run (ui/session/title_job.py)."""
        return self._titles

    def _ask_for_title(self) -> None:
        """After a run that ended with an answer: the model's title for the chat, in the background."""
        saved, settings, agent = self._record.saved, self._slot.settings, self._slot.agent
        if saved is None or settings is None or agent is None or self._record.transcript.finished is None:
            return
        answers = [s for s in getattr(self.memory, "steps", []) if s.step_type == "final_answer"]
        turns = self._record.turns
        if not answers or not turns:
            return
        files = [str(u.get("original") or u.get("name") or "") for u in turns[0].get("uploads") or []]
        self._titles.maybe_start(saved, settings.model, getattr(agent, "model", None),
                                 str(turns[0].get("text") or ""), str(getattr(answers[-1], "output", "")), files)

    def _title_tokens(self, usage: Any) -> None:
        with self.lock:
            self._record.transcript.title_tokens = usage

    def keep_in(self, make_chat: Callable[[], SavedChat]) -> bool:
        """Make this blank session (no agent, upload or run yet) a saved chat in the folder `make_chat()`
        gives. False (nothing made) if it is not blank or already kept."""
        with self.lock:
            if self._slot.agent is not None or self.running:
                return False
            return self._record.keep_in(make_chat)

    def wait_end_saved(self, timeout: float) -> bool:
        """Wait until the end of the run that just ended is on disk (at most `timeout` seconds). The run counts as
        ended before its drain saves that end: read from disk meanwhile, the chat lacks it. True at once when
        no run ended unsaved."""
        run = self._runs.run
        return run is None or not run.finished or run.end_saved.wait(timeout)

    # ----- tabs --------------------------------------------------------------------------------------------
    def detach(self) -> None:
        """The page went away while the run goes on: the registry keeps it a while for a reloaded page."""
        self._detached_at = time.time()

    def hand_over(self, key: str) -> None:
        """Another tab (`key`, a reloaded page) takes this session; its page streams the run (`take_hand_over`)."""
        with self.lock:
            self._key, self._detached_at, self._handed_over = key, None, True
        self.touch()

    def take_hand_over(self) -> bool:
        """True once after `hand_over` if the run goes on and no decision of it waits: the new page streams it
        now. A run whose decision was made but whose page closed before its resumed drain claimed it (the tab
        closed right after Approve) is claimed here: unclaimed, no page streamed it, and the new page never
        showed the rest of the run nor the next decision's panel (issue 31)."""
        with self.lock:
            handed_over, self._handed_over = self._handed_over, False
            if not handed_over or not self._runs.running:
                return False
            if self._runs.paused and not self._runs.claim_paused():  # its decision still waits: the panel shows it
                return False
            self._detached_at = None
            return True

    # ----- the end -----------------------------------------------------------------------------------------
    def reset(self) -> None:
        """New chat: stop any run, close the agent and sandbox, empty the workspace and the transcript. A run that
        has just ended is first saved with its end: the drain shows the end, then saves it, and a New chat clicked
        in between emptied the record first; the chat reopened said its run "ended before it finished a step",
        its answer lost (seen in 2 of 4 loaded runs of test_chat_list_browser.py)."""
        self.touch()
        self.wait_end_saved(RESET_SAVE_WAIT_S)
        with self.lock:
            self._runs.clear()
            self._slot.clear()
            self._record.clear()
            self._refused = None  # the refusal was the old chat's: a new chat is this tab's own

    def close(self) -> None:
        """Free the sandbox now (a run still going is stopped, its steps so far saved); the registry deletes
        the workspace after its grace period."""
        with self.lock:
            if self._closed_at is None:
                self._closed_at = time.time()
            host = self._sandbox_host()
            if self._runs.end():
                self._slot.close(keep_memory=True)
                try:
                    self.save_chat("run", announce=False)
                finally:
                    self._runs.end_saved()
            self._slot.close()
            self._keeper.ended(host)  # closing ended it (or another replica holds it now): its record goes

    def remove_files(self) -> None:
        """Delete the session's folder, unless it is a saved chat (the registry, after the grace period)."""
        self._record.remove_files()
