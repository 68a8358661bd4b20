"""One browser tab's session: its agent (memory + sandbox), workspace, transcript, uploads and current run.

A session starts runs (`start_run`: the person's message and files into the chat, then the agent's event
stream), streams them into its transcript (`drain`, see ui/session/run_stream.py), stops them, and resets or closes
itself. The run lives here, not in a web worker, so the streaming handler can return while a run waits
for a person's decision. All live sessions are kept by ui/session/registry.py.
"""
from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from agents.memory import AgentMemory
from ui.chat.formatting import for_visitor
from ui.chat.published_files import FilePublisher, Published
from ui.chat.render import Transcript
from ui.panels import files as files_panel
from ui.saved.restore import carry_memory_into
from ui.session import rewind, run_stream, stopping
from ui.session.pending_decisions import answer_question, apply_approval_mode, waiting_note
from ui.session.rewind import LastMessage
from ui.session.run_stream import RunHandle
from ui.settings import RunSettings
from ui.uploads.batch import ingest_uploads
from ui.uploads.intake import UploadResult, agent_task_text

AgentFactory = Callable[[RunSettings, Path], Any]
SLEPT_NOTE = ("💤 **Sandbox restarted**: it was closed while idle to make room on the server; its variables were "
              "rebuilt from the recorded steps.")


class Session:
    def __init__(self, key: str, root: Path, agent_factory: AgentFactory, max_upload_bytes: int) -> None:
        self.key = key
        self.root = root
        self.workspace = root / "workspace"
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.agent_factory = agent_factory
        self.max_upload_bytes = max_upload_bytes
        self.lock = threading.RLock()
        self.agent: Any = None
        self.agent_settings: RunSettings | None = None
        self.hibernated: Any = None  # the memory of an agent closed to make room (rebuilt on the next message)
        self.hibernated_why = SLEPT_NOTE  # the chat's note when the next agent gets that memory
        self.publisher = FilePublisher()  # copies of the files the browser shows (ui/chat/published_files.py)
        self.transcript = Transcript(str(self.workspace), publish=self.publish)
        self.uploads: list[UploadResult] = []
        self.run: RunHandle | None = None
        self.last_active = time.time()
        self.closed_at: float | None = None
        self.files_version = 0
        self.clock: list[list[Any]] = []  # (kind, step, event timestamp) of step-level events not yet sent
        self.approval_mode = "autonomous"  # which pauses the next run makes (ui/session/pending_decisions.py)
        self.saved: Any = None  # ui.saved.store.SavedChat when this chat is kept on disk (see ui/panels/history.py)
        self.turns: list[dict[str, Any]] = []  # what the person sent (text, uploads), to rebuild a saved chat
        self.save_failed: str | None = None  # why the last save failed (None: the chat on disk is current)
        self.save_notes: list[str] = []  # save outcomes for the chat, noted by a thread that may touch it
        self.detached_at: float | None = None  # when the page went away while a run went on (ui/reattach.py)
        self.handed_over = False  # moved to another tab whose page has not started draining its run yet
        self.refused: str | None = None  # why the last message was not sent (the chat is open in another tab)
        self.settling: threading.Thread | None = None  # waits for a stopped run's end (ui/session/stopping.py)
        self.stop_settle_s, self.stop_wait_s = stopping.STOP_SETTLE_S, stopping.STOP_WAIT_S

    # ----- state ---------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.run is not None and not self.run.finished

    def touch(self) -> None:
        self.last_active = time.time()

    @property
    def memory(self) -> Any:
        """The conversation so far: the live agent's memory, or the one kept for the next agent (closed to make
        room, or stopped without confirming)."""
        agent = self.agent
        return getattr(agent, "memory", None) if agent is not None else self.hibernated

    def publish(self, path: str | Path) -> Published:
        """The published copy of a file of this session's folder, as it is now (NotPublishable if it cannot be)."""
        return self.publisher.publish(path, inside=self.root)

    def file_paths(self) -> list[str]:
        """The files panel: every file of the workspace, uploads first, as published copies (ui/panels/files.py)."""
        return files_panel.shown_paths(self)

    # ----- runs ----------------------------------------------------------------------------------------
    def start_run(self, text: str, files: list[tuple[str, str]], settings: RunSettings,
                  kept: Sequence[UploadResult] = ()) -> bool:
        """Add the person's message (and files) to the chat and start the agent. False if nothing started.
        `kept`: uploads already in the workspace that go with the message again (a resent message's)."""
        self.touch()
        stopping.finish_settling(self)  # a stopped run's agent is kept or replaced before the next run
        with self.lock:
            if self.closed_at is not None:
                raise RuntimeError("This session was closed.")
            if self.running:
                if answer_question(self, text):  # the run waits for an answer: this is it
                    return True
                self.transcript.add_note(waiting_note(self)
                                         or "⏳ A run is still going: wait for it, or press Stop.")
                return False
            results = ingest_uploads(files, self.workspace, self.max_upload_bytes) + list(kept)
            good = [r for r in results if r.ok]
            earlier = list(self.uploads)  # a small model is told about them again with each message
            self.uploads.extend(good)
            if good:
                self.files_version += 1
            self.transcript.add_message(text, results)  # the agent is warned of uploads that give instructions too
            if not text.strip() and not good:
                return False
            try:
                agent = self._agent_for(settings)
                apply_approval_mode(agent, self.approval_mode)
            except Exception as exc:
                self.transcript.add_note(f'<span class="ad-error">Could not start the agent</span> '
                                         f"{for_visitor(exc, 'starting the agent')}")
                return False
            task = agent_task_text(text, results, getattr(agent, "prompt_templates", None), earlier)
            self.turns.append({"task": task, "text": text, "uploads": [
                {"name": r.safe_name, "original": r.original_name, "size": r.size_bytes, "kind": r.kind,
                 "preview": r.preview} for r in good]})
            self.save_chat("start")  # the person's message is on disk before the agent starts
            self.transcript.finished = None
            self.run = RunHandle(agent.run(task, stream=True, reset=False))
            return True

    # ----- rewinding (Retry, Edit and resend: ui/session/rewind.py) -------------------------------------
    def rewind_refusal(self, action: str) -> str | None:
        """Why `action` ("retry", "edit your last message") cannot happen now, or None."""
        with self.lock:
            waiting = self.run is not None and self.run.waiting_decision is not None
            return rewind.refusal(self.closed_at is not None, self.running, waiting, bool(self.turns), action)

    def last_message(self) -> LastMessage | None:
        """What the person sent last (its text and uploads), for Edit; None before the first message."""
        with self.lock:
            return rewind.message_of(self.turns[-1], self.workspace) if self.turns else None

    def rewind_last_turn(self, settings: RunSettings, action: str = "retry") -> LastMessage:
        """Retry / Edit: the conversation as it was before the last message (memory, chat, variables rebuilt,
        saved at once), and that message, to send again with `start_run(..., kept=message.uploads)`.

        The agent is kept when `settings` are its own (its sandbox restarted), else a new one is built before
        anything changes. Raises RewindRefused, changing nothing, when a run is going, there is no message yet,
        or that new agent cannot be built."""
        stopping.finish_settling(self)  # a stopped run's agent is kept or replaced first
        with self.lock:
            why = self.rewind_refusal(action)
            if why is not None:
                raise rewind.RewindRefused(why)
            turns, memory = list(self.turns), self.memory
            start = rewind.last_turn_start(memory, turns)
            if memory is not None and start is None:
                start = len(memory.steps)  # the last message's run left no step: every step is kept
            reuse = self.agent is not None and settings == self.agent_settings
        replacement = None
        if not reuse:  # built before anything changes, outside the lock (loading a model may take a while)
            try:
                replacement = self.agent_factory(settings, self.workspace)
            except Exception as exc:
                raise rewind.RewindRefused(f"Could not start the agent ({for_visitor(exc, 'starting the agent')}). "
                                           "Nothing was changed.") from None
        with self.lock:
            changed = self.rewind_refusal(action)
            if changed is None and (self.turns != turns or (replacement is None and self.agent is None)):
                changed = "The chat changed meanwhile (or its sandbox was closed to make room): try again."
            if changed is not None:
                if replacement is not None:
                    stopping.close_quietly(replacement)
                raise rewind.RewindRefused(changed)
            if replacement is not None:
                self._close_agent()
                self.use_agent(replacement, settings)
            else:
                restart = getattr(self.agent, "restart_sandbox", None)
                if restart is not None:
                    restart()  # the undone answer's variables go with its worker
            kept = rewind.memory_before(memory, start) if memory is not None else AgentMemory()
            undone = rewind.files_written(memory.steps[start:]) if memory is not None else []
            transcript = Transcript(str(self.workspace), publish=self.publish)
            self.uploads = rewind.rewound_chat(transcript, kept, turns[:-1], self.workspace, self.agent, undone)
            self.transcript, self.turns, self.hibernated, self.clock = transcript, turns[:-1], None, []
            self.files_version += 1
            self.save_chat("rewind")  # on disk now: a reload shows the rewound chat even if the next run fails
        return rewind.message_of(turns[-1], self.workspace)

    def _agent_for(self, settings: RunSettings) -> Any:
        if self.agent is not None and settings != self.agent_settings:
            # Changed settings need a new agent, but the conversation goes on: the new agent gets the memory
            # and its sandbox re-runs the recorded code, so follow-ups still see earlier variables.
            memory = self.agent.memory
            replacement = self.agent_factory(settings, self.workspace)  # if this fails, the old agent stays
            self._close_agent()
            self.use_agent(replacement, settings)
            if memory.steps:
                carry_memory_into(self.agent, memory, self.transcript,
                                  "⚙️ **Settings changed**: the new agent continues this conversation.")
        if self.agent is None:
            self.use_agent(self.agent_factory(settings, self.workspace), settings)
            memory, self.hibernated, why = self.hibernated, None, self.hibernated_why
            if memory is not None and memory.steps:
                carry_memory_into(self.agent, memory, self.transcript, why)
        return self.agent

    def use_agent(self, agent: Any, settings: RunSettings | None) -> None:
        """Make `agent` this session's; each step it finishes is saved at once (a crash loses at most the step
        in progress)."""
        self.agent, self.agent_settings = agent, settings
        callbacks = getattr(agent, "step_callbacks", None)
        if callbacks is not None and hasattr(callbacks, "add"):
            callbacks.add(self._save_step)

    def _save_step(self, step: Any, agent: Any) -> None:
        """A step callback, in the agent's thread: the memory is complete and nobody else changes it now. The
        chat is not touched from here: the drain notes the outcome with the step's end (StepFinished)."""
        if agent is self.agent and self.saved is not None:
            self.save_chat("step", announce=False)

    def hibernate(self) -> bool:
        """Close the idle agent and its sandbox, keeping its memory for the next message. False if busy."""
        with self.lock:
            if self.agent is None or self.running:
                return False
            self.hibernated, self.hibernated_why = self.agent.memory, SLEPT_NOTE
            self._close_agent()
            return True

    @property
    def holds_sandbox(self) -> bool:
        return self.agent is not None

    def drain(self, min_interval: float = 0.05, gather: float = 0.02, heartbeat: float = 1.0,
              stop_grace: float = 0.6) -> Iterator[str]:
        """Apply the run's events to the transcript, yielding after each batch (and every `heartbeat` seconds).

        Ends when the run has finished, or after a DecisionRequested (the run waits for a person; call
        drain again once the decision is resolved).
        """
        run = self.run
        if run is None:
            return
        run.waiting_decision = None
        yield from run_stream.drain(self, run, min_interval, gather, heartbeat, stop_grace)

    def save_chat(self, reason: str, announce: bool = True, memory: Any = None) -> bool:
        """Keep a saved chat on disk: the person's message when sent ("start"), each finished step ("step"), at
        a pause and at the run's end ("run"). A failure is noted in the chat (at once with `announce`, else by
        the drain with the step's end); the older save stays as it was. `memory`: this one instead of the
        session's. False if it failed."""
        if self.saved is None:
            return True
        try:
            self.saved.save(self, reason, memory)
        except Exception as exc:  # the chat goes on; the person learns at once that it was not saved
            why = for_visitor(exc, "saving a chat")
            if self.save_failed is None:
                self.save_notes.append(f'<span class="ad-error">Could not save this chat</span> {why}. The chat '
                                       "goes on here, and the last good save is kept on disk; it is saved again "
                                       "with the next step.")
            self.save_failed = why
            ok = False
        else:
            if self.save_failed is not None:
                self.save_notes.append("💾 Saved again: the chat on disk is up to date.")
            self.save_failed = None
            ok = True
        if announce:
            self.note_saves()
        return ok

    def note_saves(self) -> None:
        """Show the save outcomes waiting for the chat (call with the session's lock, or from its thread)."""
        while self.save_notes:
            self.transcript.add_note(self.save_notes.pop(0))

    def remove_files(self) -> None:
        """Delete the session's folder, unless it is a saved chat (only the person's Delete removes those)."""
        self.publisher.remove()
        if self.saved is not None and self.saved.kept:
            return
        shutil.rmtree(self.root, ignore_errors=True)

    def take_clock(self) -> list[list[Any]]:
        clock, self.clock = self.clock, []
        return clock

    def interrupt(self) -> bool:
        """Stop the run at once (the agent stops its sandbox code). The session stays usable."""
        self.touch()
        with self.lock:
            run, agent = self.run, self.agent
            if run is None or run.finished or agent is None:
                return False
            run.stop_requested_at = time.time()
        agent.interrupt()
        run.wake()  # the drain checks at once whether the run ended, instead of at its next heartbeat
        return True

    def abandon_run(self, run: RunHandle) -> None:
        """The agent did not confirm the stop in time: the run ends in the chat now, nothing is lost
        (ui/session/stopping.py)."""
        stopping.abandon_run(self, run)

    def _close_agent(self) -> None:
        agent, self.agent, self.agent_settings = self.agent, None, None
        if agent is not None:
            stopping.close_quietly(agent)

    def reset(self) -> None:
        """New chat: stop any run, close the agent and sandbox, empty the workspace and the transcript."""
        self.touch()
        with self.lock:
            if self.run is not None:
                self.run.finished = True
            self.run = None
            self._close_agent()
            if self.saved is not None and self.saved.kept:  # a saved chat's files stay: continue in a new chat
                self.saved = self.saved.store.create(self.saved.owner)
                self.root, self.workspace = self.saved.folder, self.saved.workspace
            self.turns = []
            self.hibernated = None
            shutil.rmtree(self.workspace, ignore_errors=True)
            self.workspace.mkdir(parents=True, exist_ok=True)
            self.publisher.remove()
            self.transcript = Transcript(str(self.workspace), publish=self.publish)
            self.uploads = []
            self.clock = []
            self.files_version += 1

    def close(self) -> None:
        """Free the sandbox now (a run still going is stopped, its steps so far saved); the registry deletes
        the workspace after its grace period."""
        with self.lock:
            if self.closed_at is None:
                self.closed_at = time.time()
            if self.run is not None and not self.run.finished:
                self.run.finished = True
                memory = stopping.snapshot_memory(self.agent.memory) if self.agent is not None else self.hibernated
                self._close_agent()
                self.hibernated = memory
                self.save_chat("run", announce=False)
            self._close_agent()

