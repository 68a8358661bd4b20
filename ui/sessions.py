"""Per-browser-tab sessions: each has its own agent (memory + sandbox), workspace, transcript and run.

The run lives here, not in a web worker: `Session.start_run` starts the agent's event stream and a pump
thread that moves its events into a queue; `Session.drain` applies queued events to the transcript and
yields whenever there is something new to show, until the run finishes or asks for a decision
(DecisionRequested). Then the handler returns; after the decision is resolved a new drain picks up the
same queue. The registry closes idle and closed sessions (sandbox first, workspace after a grace period).
"""
from __future__ import annotations

import queue
import secrets
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from agents import events as ev
from agents.guard import detect_injection
from ui.chat_restore import carry_memory_into
from ui.render import Transcript
from ui.settings import RunSettings
from ui.uploads import UploadResult, agent_task_text, ingest_upload

AgentFactory = Callable[[RunSettings, Path], Any]
_END = object()


@dataclass
class _Failure:
    error: BaseException


class RunHandle:
    """One run's event stream, read by a pump thread into a queue so a drain can wait with a timeout."""

    def __init__(self, stream: Iterator[ev.Event]) -> None:
        self.queue: queue.Queue = queue.Queue()
        self.finished = False  # RunFinished (or the end of the stream) has been applied
        self.waiting_decision: ev.DecisionRequested | None = None
        self.stop_requested_at: float | None = None
        self.answered: str | None = None  # the id of the decision a person answered (ui/approvals.py)
        self._thread = threading.Thread(target=self._pump, args=(stream,), name="agentdeck-pump", daemon=True)
        self._thread.start()

    def _pump(self, stream: Iterator[ev.Event]) -> None:
        try:
            for event in stream:
                self.queue.put(event)
        except BaseException as exc:  # the loop itself failed: show it rather than hang
            self.queue.put(_Failure(exc))
        finally:
            self.queue.put(_END)


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
        self.transcript = Transcript(str(self.workspace))
        self.uploads: list[UploadResult] = []
        self.run: RunHandle | None = None
        self.last_active = time.time()
        self.closed_at: float | None = None
        self.files_version = 0
        self.clock: list[list[Any]] = []  # (kind, step, event timestamp) of step-level events not yet sent
        self.approval_mode = "autonomous"  # which pauses the next run makes (ui/approvals.py)
        self.saved: Any = None  # ui.persistence.SavedChat when this chat is kept on disk (see ui/history_panel.py)
        self.turns: list[dict[str, Any]] = []  # what the person sent (text, uploads), to rebuild a saved chat

    # ----- state ---------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.run is not None and not self.run.finished

    def touch(self) -> None:
        self.last_active = time.time()

    def file_paths(self) -> list[str]:
        """Uploads first, then files the agent wrote (images are shown in the chat instead)."""
        paths = [str(r.path) for r in self.uploads if r.ok and r.path is not None and r.path.exists()]
        paths += [f["path"] for f in self.transcript.files if Path(f["path"]).exists()]
        return list(dict.fromkeys(paths))

    # ----- runs ----------------------------------------------------------------------------------------
    def start_run(self, text: str, files: list[tuple[str, str]], settings: RunSettings) -> bool:
        """Add the person's message (and files) to the chat and start the agent. False if nothing started."""
        self.touch()
        with self.lock:
            if self.closed_at is not None:
                raise RuntimeError("This session was closed.")
            if self.running:
                from ui import approvals

                if approvals.answer_question(self, text):  # the run waits for an answer: this is it
                    return True
                self.transcript.add_note(approvals.waiting_note(self)
                                         or "⏳ A run is still going: wait for it, or press Stop.")
                return False
            results = [ingest_upload(path, self.workspace, name, self.max_upload_bytes) for path, name in files]
            good = [r for r in results if r.ok]
            self.uploads.extend(good)
            if good:
                self.files_version += 1
            self.transcript.add_user(text, [str(r.path) for r in good])
            self.transcript.add_uploads(results)
            for r in good:  # the agent is warned too (ui/uploads.agent_task_text); show the person
                for finding in detect_injection(r.preview):
                    self.transcript.apply(ev.InjectionFlagged(run_id="upload", step=0, source=f"upload:{r.safe_name}",
                                                              excerpt=finding.excerpt))
            if not text.strip() and not good:
                return False
            try:
                agent = self._agent_for(settings)
                from ui.approvals import apply_approval_mode

                apply_approval_mode(agent, self.approval_mode)
            except Exception as exc:
                self.transcript.add_note(f'<span class="ad-error">Could not start the agent</span> '
                                         f"{type(exc).__name__}: {exc}")
                return False
            task = agent_task_text(text, results)
            self.turns.append({"task": task, "text": text, "uploads": [
                {"name": r.safe_name, "original": r.original_name, "size": r.size_bytes, "kind": r.kind,
                 "preview": r.preview} for r in good]})
            self._save("start")
            self.transcript.finished = None
            self.run = RunHandle(agent.run(task, stream=True, reset=False))
            return True

    def _agent_for(self, settings: RunSettings) -> Any:
        if self.agent is not None and settings != self.agent_settings:
            # Changed settings need a new agent, but the conversation goes on: the new agent gets the memory
            # and its sandbox re-runs the recorded code, so follow-ups still see earlier variables.
            memory = self.agent.memory
            self._close_agent()
            self.agent = self.agent_factory(settings, self.workspace)
            self.agent_settings = settings
            if memory.steps:
                carry_memory_into(self.agent, memory, self.transcript,
                                  "⚙️ **Settings changed**: the new agent continues this conversation.")
        if self.agent is None:
            self.agent = self.agent_factory(settings, self.workspace)
            self.agent_settings = settings
        return self.agent

    def drain(self, min_interval: float = 0.05, gather: float = 0.02, heartbeat: float = 1.0,
              stop_grace: float = 5.0) -> Iterator[str]:
        """Apply the run's events to the transcript, yielding after each batch (and every `heartbeat` seconds).

        Ends when the run has finished, or after a DecisionRequested (the run waits for a person; call
        drain again once the decision is resolved).
        """
        run = self.run
        if run is None:
            return
        run.waiting_decision = None
        yield from self._drain(run, min_interval, gather, heartbeat, stop_grace)

    def _drain(self, run: RunHandle, min_interval: float, gather: float, heartbeat: float,
               stop_grace: float) -> Iterator[str]:
        last_yield = 0.0
        while not run.finished:
            try:
                item = run.queue.get(timeout=heartbeat)
            except queue.Empty:
                self.touch()
                if run.stop_requested_at and time.time() - run.stop_requested_at > stop_grace:
                    self._abandon_run(run)
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
            with self.lock:
                for item in batch:
                    self._apply(run, item)
                    if run.finished or run.waiting_decision is not None:
                        break
                if run.finished or run.waiting_decision is not None:
                    self._save("run")
            self.touch()
            last_yield = time.time()
            yield "events"
            if run.waiting_decision is not None:
                return

    def _apply(self, run: RunHandle, item: Any) -> None:
        if item is _END:
            if not run.finished:
                run.finished = True
                if self.transcript.finished is None:
                    self.transcript.add_note("⏹️ The run ended without a result.")
            return
        if isinstance(item, _Failure):
            self.transcript.add_note(f'<span class="ad-error">The agent crashed</span> '
                                     f"{type(item.error).__name__}: {item.error}")
            return
        before = len(self.transcript.files)
        self.transcript.apply(item)
        if len(self.transcript.files) != before:
            self.files_version += 1
        if isinstance(item, (ev.StepStarted, ev.StepFinished, ev.FinalAnswer, ev.RunFinished)):
            self.clock.append([item.kind, item.step, item.parent_id, item.timestamp])
        if isinstance(item, ev.RunFinished) and item.parent_id is None:
            run.finished = True
        elif isinstance(item, ev.DecisionRequested):
            run.waiting_decision = item

    def _save(self, reason: str) -> None:
        """Keep a saved chat on disk: meta at the first message ("start"), memory after a run or at a pause."""
        if self.saved is None:
            return
        try:
            self.saved.save(self, reason)
        except Exception as exc:  # the chat goes on; the person learns it was not saved
            self.transcript.add_note(f'<span class="ad-error">Could not save this chat</span> '
                                     f"{type(exc).__name__}: {exc}")

    def remove_files(self) -> None:
        """Delete the session's folder, unless it is a saved chat (only the person's Delete removes those)."""
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
        return True

    def _abandon_run(self, run: RunHandle) -> None:
        """The agent did not confirm the stop in time: drop it (a new one starts with the next message)."""
        with self.lock:
            run.finished = True
            self.transcript.add_note("⏹️ Stopped (the agent did not confirm in time, so it was closed; "
                                     "the next message starts a fresh agent with the same files).")
            self._close_agent()

    def _close_agent(self) -> None:
        agent, self.agent, self.agent_settings = self.agent, None, None
        if agent is not None:
            try:
                agent.interrupt()
            finally:
                try:
                    agent.close()
                except Exception:
                    pass

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
            shutil.rmtree(self.workspace, ignore_errors=True)
            self.workspace.mkdir(parents=True, exist_ok=True)
            self.transcript = Transcript(str(self.workspace))
            self.uploads = []
            self.clock = []
            self.files_version += 1

    def close(self) -> None:
        """Free the sandbox now; the registry deletes the workspace after its grace period."""
        with self.lock:
            if self.closed_at is None:
                self.closed_at = time.time()
            if self.run is not None:
                self.run.finished = True
            self._close_agent()


class SessionRegistry:
    """All live sessions, keyed by the browser tab's session hash."""

    def __init__(self, data_dir: str | Path, agent_factory: AgentFactory, idle_timeout_s: float = 3600.0,
                 grace_s: float = 300.0, max_upload_bytes: int = 50 * 1024 * 1024) -> None:
        self.root = Path(data_dir) / "sessions"
        self.root.mkdir(parents=True, exist_ok=True)
        self.agent_factory = agent_factory
        self.idle_timeout_s = idle_timeout_s
        self.grace_s = grace_s
        self.max_upload_bytes = max_upload_bytes
        self._sessions: dict[str, Session] = {}
        self._closed: list[Session] = []
        self._expired_keys: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._reaper: threading.Thread | None = None

    def get(self, key: str) -> Session:
        with self._lock:
            session = self._sessions.get(key)
            if session is None:
                folder = self.root / secrets.token_hex(16)  # unguessable: files are served from here
                session = Session(key, folder, self.agent_factory, self.max_upload_bytes)
                if key in self._expired_keys:
                    self._expired_keys.discard(key)
                    session.transcript.add_note("🕰️ The previous session was closed after being idle; this is a "
                                                "fresh one (new memory, empty workspace).")
                self._sessions[key] = session
            session.touch()
            return session

    def install(self, key: str, root: Path) -> Session:
        """A new session rooted at `root` (a saved chat's folder) for `key`; the key's previous one is closed."""
        session = Session(key, root, self.agent_factory, self.max_upload_bytes)
        with self._lock:
            old = self._sessions.get(key)
            self._sessions[key] = session
            if old is not None:
                self._closed.append(old)
        if old is not None:
            old.close()
        return session

    def rekey(self, old_key: str, key: str, when: Callable[[Session], bool] = lambda s: True) -> Session | None:
        """Move the live session of `old_key` (a reloaded tab's) to the tab's new `key`, if `when(session)`."""
        session = self.peek(old_key)
        if session is None or old_key == key or not when(session):
            return None
        with self._lock:
            if self._sessions.get(old_key) is not session:
                return None
            del self._sessions[old_key]
            replaced = self._sessions.get(key)
            self._sessions[key] = session
            session.key = key
            if replaced is not None:
                self._closed.append(replaced)
        if replaced is not None:
            replaced.close()
        session.touch()
        return session

    def peek(self, key: str) -> Session | None:
        with self._lock:
            return self._sessions.get(key)

    def __len__(self) -> int:
        return len(self._sessions)

    def close(self, key: str, expired: bool = False) -> None:
        with self._lock:
            session = self._sessions.pop(key, None)
            if session is None:
                return
            self._closed.append(session)
            if expired:
                self._expired_keys.add(key)
        session.close()

    def reap(self, now: float | None = None) -> None:
        """Close sessions idle for longer than the timeout; delete workspaces whose grace period is over."""
        now = now or time.time()
        with self._lock:
            idle = [k for k, s in self._sessions.items() if now - s.last_active > self.idle_timeout_s]
        for key in idle:
            self.close(key, expired=True)
        with self._lock:
            due = [s for s in self._closed if s.closed_at is not None and now - s.closed_at >= self.grace_s]
            self._closed = [s for s in self._closed if s not in due]
        for session in due:
            session.remove_files()

    def start_reaper(self, interval_s: float = 30.0) -> None:
        if self._reaper is not None:
            return

        def loop() -> None:
            while not self._stop.wait(interval_s):
                try:
                    self.reap()
                except Exception:  # never let the reaper die
                    pass

        self._reaper = threading.Thread(target=loop, name="agentdeck-reaper", daemon=True)
        self._reaper.start()

    def shutdown(self) -> None:
        """Close every session and delete every workspace (server shutdown)."""
        self._stop.set()
        with self._lock:
            keys = list(self._sessions)
        for key in keys:
            self.close(key)
        with self._lock:
            closed, self._closed = self._closed, []
        for session in closed:
            session.remove_files()
