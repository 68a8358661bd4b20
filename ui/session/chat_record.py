"""A session's record of its conversation: the chat as the person sees it, the files, and the copy kept on disk.

Kept apart from the session's agent and runs (ui/session/agent_slot.py, run_control.py) because this is what the
person sees and what is saved, whichever agent made it: the transcript, the uploads and the files panel's
version, the turns sent, the saved chat (ui/saved/store.py) and what became of its last save. Its invariants:
`files_version` grows whenever the files panel's list may have changed; a failed save is said in the chat once,
and so is the next good one. It shares its session's lock; handlers read it (`session.record`) and change it
through the methods here or the session's.
"""
from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agents import events as ev
from agents.executor.tree_walk import remove_tree
from ui.chat.formatting import for_visitor
from ui.chat.published_files import FilePublisher, NotPublishable, Published
from ui.chat.render import Transcript
from ui.config.current import current_settings
from ui.saved.restore import replay_memory, show_unfinished
from ui.saved.store import SavedChat
from ui.saved.workspace_mirror import MirrorError, WorkspaceMirror, describe
from ui.session import rewind
from ui.session.pending_decisions import TAKEN_NOTE, saved_request, settle_taken
from ui.session.workspace_access import WorkspaceFiles, files_of, relative_name
from ui.session.workspace_files import FileRemovalError, listed_files
from ui.settings import RunSettings
from ui.shared.blobs import BlobStoreError, LocalBlobs
from ui.uploads.batch import ingest_uploads, workspace_quota_bytes
from ui.uploads.intake import UploadResult
from ui.web.gradio_compat import discard_upload
from ui.web.metrics import count_save

RESTORING_NOTE = "♻️ Restoring the agent: rebuilding the sandbox's variables…"


class ChatRecord:
    def __init__(self, root: Path, lock: threading.RLock, saved: SavedChat | None = None) -> None:
        self._lock = lock
        self._root = root
        self._workspace = root / "workspace"
        self._workspace.mkdir(parents=True, exist_ok=True)
        self._publisher = FilePublisher()  # copies of the files the browser shows (ui/chat/published_files.py)
        self._transcript = Transcript(str(self._workspace), publish=self.publish)
        self._uploads: list[UploadResult] = []
        self._files_version = 0
        self._clock: list[list[Any]] = []  # (kind, step, parent, event timestamp) of step events not yet sent
        self._turns: list[dict[str, Any]] = []  # what the person sent (text, uploads), to rebuild a saved chat
        self._saved = saved  # the chat on disk, if this one is kept
        self._save_failed: str | None = None  # why the last save failed (None: the chat on disk is current)
        self._save_notes: list[str] = []  # save outcomes for the chat, noted by a thread that may touch it
        self._restoring: Any = None  # the "restoring" note while a reopened chat waits for its agent
        self._host_of: Callable[[], Any] = lambda: None  # the sandbox host now, if any (`use_host`)
        self._mirror: tuple[SavedChat, WorkspaceMirror] | None = None  # the files' copy in a shared store

    @property
    def root(self) -> Path:
        return self._root

    @property
    def workspace(self) -> Path:
        return self._workspace

    def use_host(self, host_of: Callable[[], Any]) -> None:
        """Where the workspace's files are: `host_of()` gives the live sandbox host (None without one)."""
        self._host_of = host_of

    @property
    def files(self) -> WorkspaceFiles:
        """The workspace's files through the sandbox's own operations (ui/session/workspace_access.py)."""
        return files_of(self._host_of(), self._workspace)

    @property
    def published_bytes(self) -> int:
        """What the copies of the files this chat has shown take (in Gradio's folder, until the session goes)."""
        return self._publisher.bytes

    @property
    def transcript(self) -> Transcript:
        """The chat (read it with the session's lock held)."""
        return self._transcript

    @property
    def uploads(self) -> list[UploadResult]:
        return list(self._uploads)

    @property
    def files_version(self) -> int:
        return self._files_version

    @property
    def turns(self) -> list[dict[str, Any]]:
        return list(self._turns)

    @property
    def saved(self) -> SavedChat | None:
        return self._saved

    # ----- the chat --------------------------------------------------------------------------------------
    def add_note(self, text: str, once: bool = False) -> None:
        """A note of the app's in the chat; with `once`, not again while it is the chat's last message."""
        with self._lock:
            roots = self._transcript.roots
            if once and roots and roots[-1].parts.get("text") == text:
                return
            self._transcript.add_note(text)

    def add_error(self, headline: str, error: BaseException, doing: str, more: str = "") -> None:
        """A failure in the chat: `headline` marked as an error, what went wrong while `doing` in words fit for
        a visitor (no server paths: ui/chat/formatting.py), then `more`."""
        self.add_note(f'<span class="ad-error">{headline}</span> {for_visitor(error, doing)}{more}')

    def take_message(self, text: str, files: list[tuple[str, str]], max_upload_bytes: int,
                     kept: Sequence[UploadResult] = ()) -> tuple[list[UploadResult], list[UploadResult]]:
        """The person's message into the chat, its files into the workspace (or refused, with the reason);
        `kept`: uploads already in the workspace that go with it again (a resent message's).
        Returns (this message's upload results, the uploads of earlier messages)."""
        with self._lock:
            taken = ingest_uploads(files, self.files, max_upload_bytes)
            for (path, _), result in zip(files, taken, strict=True):
                if result.ok:  # the workspace (this session's) has it now: the upload route's copy goes
                    discard_upload(path)
            results = taken + list(kept)
            good = [r for r in results if r.ok]
            earlier = list(self._uploads)
            self._uploads.extend(good)
            if good:
                self._files_version += 1
            self._transcript.add_message(text, results)  # the agent is warned of uploads that give instructions too
            return results, earlier

    def add_turn(self, task: str, text: str, uploads: list[UploadResult]) -> None:
        """What was sent for one run, kept with the saved chat (a reopened chat shows it)."""
        with self._lock:
            self._turns.append({"task": task, "text": text, "uploads": [
                {"name": r.safe_name, "original": r.original_name, "size": r.size_bytes, "kind": r.kind,
                 "preview": r.preview} for r in uploads]})

    def apply(self, event: ev.Event) -> None:
        """A run's event into the chat (the files panel and the step clock follow)."""
        with self._lock:
            before = self._transcript.files_revision
            self._transcript.apply(event)
            if self._transcript.files_revision != before:
                self._files_version += 1  # a new or changed file: the files panel publishes its current version
            if isinstance(event, (ev.StepStarted, ev.StepFinished, ev.FinalAnswer, ev.RunFinished)):
                self._clock.append([event.kind, event.step, event.parent_id, event.timestamp])
            if isinstance(event, ev.StepFinished):
                self.note_saves()  # the step was saved (or not) in the agent's thread just before

    def rewind_to(self, kept: Any, turns: list[dict[str, Any]], agent: Any, undone: list[str]) -> None:
        """The chat as it was before the last message (ui/session/rewind.py): rebuilt from the `kept` memory and
        messages, as a reopened chat is; `agent` gets that memory, its variables rebuilt; `undone`: the files the
        undone answer wrote, named in the chat. Called by `Session.rewind_last_turn`."""
        with self._lock:
            transcript = Transcript(str(self._workspace), publish=self.publish)
            self._uploads = rewind.rewound_chat(transcript, kept, turns, self.files, agent, undone)
            self._transcript, self._turns, self._clock = transcript, list(turns), []
            self._files_version += 1

    def take_clock(self) -> list[list[Any]]:
        with self._lock:
            clock, self._clock = self._clock, []
            return clock

    # ----- files ---------------------------------------------------------------------------------------
    def publish(self, path: str | Path) -> Published:
        """The published copy of a file of this session's folder, as it is now (NotPublishable if it cannot be):
        a workspace file through `files` (whatever runs the sandbox), another (an export beside the chat) from
        the session's folder itself."""
        relpath = relative_name(path, self._workspace)
        if relpath is not None:
            return self._publisher.publish_workspace_file(self.files, relpath)
        return self._publisher.publish(path, inside=self._root)

    def workspace_files(self) -> list[str]:
        """The workspace files the files panel lists, in its order (ui/session/workspace_files.py)."""
        return listed_files(self._uploads, [f["path"] for f in self._transcript.files], self.files)

    def file_paths(self) -> list[str]:
        """The files panel's value: the published copy of each listed file (unpublishable ones left out)."""
        shown = []
        for path in self.workspace_files():
            try:
                shown.append(self.publish(path).path)
            except NotPublishable:
                continue
        return shown

    def remove_file(self, relative: str) -> str:
        """Delete a listed workspace file (given relative to the workspace); returns its name. Only while no
        run goes on (`Session.remove_file` checks)."""
        with self._lock:
            target = self._workspace / relative
            if str(target) not in self.workspace_files():
                raise FileRemovalError(f"{relative} is no longer in the workspace.")
            try:  # by descriptor: the worker may have swapped a folder on the way for a link since the listing
                self.files.remove(os.path.relpath(target, self._workspace))
            except PermissionError:
                raise FileRemovalError(f"{relative} is no longer in the workspace (its folder was replaced by a "
                                       "link).") from None
            except OSError as exc:
                raise FileRemovalError(f"{relative} could not be deleted: {exc.strerror}.") from exc
            self._uploads = [r for r in self._uploads if r.path is None or Path(r.path) != target]
            self._transcript.files = [f for f in self._transcript.files if Path(f["path"]) != target]
            self._files_version += 1
        return relative

    def remove_files(self) -> None:
        """Delete the session's folder, unless it is a saved chat (only the person's Delete removes those)."""
        self._publisher.remove()
        if self._saved is not None and self._saved.kept:
            return
        remove_tree(str(self._root))
        if self._saved is not None:  # an owner folder left empty (a page load from a fresh API client) goes too
            with contextlib.suppress(OSError):
                self._root.parent.rmdir()

    def clear(self) -> None:
        """New chat: an empty chat, workspace and file list (a kept chat's files stay: a new saved chat starts)."""
        with self._lock:
            if self._saved is not None and self._saved.kept:
                self._saved = self._saved.store.create(self._saved.owner)
                self._root, self._workspace = self._saved.folder, self._saved.workspace
            self._turns = []
            remove_tree(str(self._workspace))
            self._workspace.mkdir(parents=True, exist_ok=True)
            self._publisher.remove()
            self._transcript = Transcript(str(self._workspace), publish=self.publish)
            self._uploads = []
            self._clock = []
            self._files_version += 1

    # ----- the saved chat --------------------------------------------------------------------------------
    def save(self, reason: str, memory: Any, settings: RunSettings | None, announce: bool = True) -> bool:
        """Keep the saved chat on disk (see `Session.save_chat`); a failure is noted in the chat, at once with
        `announce`, else with the step's end. False if it failed. Call with the session's lock held, or from
        the agent's thread in its step callback."""
        if self._saved is None:
            return True
        try:
            self._saved.save(reason, turns=self._turns, memory=memory, settings=settings)
            if reason != "step":  # the person's message (its uploads) is taken, or a run ended: the files too
                self._push_files()
        except Exception as exc:  # the chat goes on; the person learns at once that it was not saved
            why = for_visitor(exc, "saving a chat")
            if self._save_failed is None:
                self._save_notes.append(f'<span class="ad-error">Could not save this chat</span> {why}. The chat '
                                        "goes on here, and the last good save is kept on disk; it is saved again "
                                        "with the next step.")
            self._save_failed = why
            ok = False
        else:
            if self._save_failed is not None:
                self._save_notes.append("💾 Saved again: the chat on disk is up to date.")
            self._save_failed = None
            ok = True
        count_save(ok)
        if announce:
            self.note_saves()
        return ok

    def mirror(self) -> WorkspaceMirror | None:
        """The copy of the workspace in the chat store when replicas share it (ui/saved/workspace_mirror.py);
        None on one machine, where the chat's folder is the only copy needed."""
        saved = self._saved
        if saved is None or isinstance(saved.store.blobs, LocalBlobs):
            return None
        if self._mirror is None or self._mirror[0] is not saved:
            quota = workspace_quota_bytes(int(current_settings().max_upload_mb * 2**20))
            self._mirror = (saved, WorkspaceMirror(saved.store.blobs, saved.key, quota))
        return self._mirror[1]

    def _push_files(self) -> None:
        mirror = self.mirror()
        if mirror is None:
            return
        uploads = [r.safe_name for r in self._uploads if r.ok and r.safe_name]
        try:
            report = mirror.push(self.files, first=uploads)
        except (MirrorError, BlobStoreError) as exc:
            raise MirrorError(f"the chat's files could not be copied to the shared chat store: {exc}") from exc
        note = describe(report, "copied to the shared chat store (another server could not reopen them)")
        if note and note not in self._save_notes:
            self._save_notes.append(note)

    def _pull_files(self) -> None:
        """Bring back the files a chat kept in the shared store (it was served by another replica)."""
        mirror = self.mirror()
        if mirror is None:
            return
        try:
            report = mirror.pull(self.files)
        except (MirrorError, BlobStoreError) as exc:
            self._transcript.add_note(f'<span class="ad-error">The chat\'s files could not be brought back</span> '
                                      f"{for_visitor(exc, 'reading the chat store')}. Code that reads them will "
                                      "fail until they are uploaded again.")
            return
        note = describe(report, "brought back from the shared chat store")
        if note:
            self._transcript.add_note(note)

    def note_saves(self) -> None:
        """Show the save outcomes waiting for the chat (call with the session's lock, or from its thread)."""
        while self._save_notes:
            self._transcript.add_note(self._save_notes.pop(0))

    def keep_in(self, make_chat: Callable[[], SavedChat]) -> bool:
        """Move a record without uploads or saved chat into a saved chat's folder (`make_chat()`); the old
        folder goes. False (nothing made) otherwise."""
        with self._lock:
            if self._saved is not None or self._uploads:
                return False
            chat = make_chat()
            old_root = self._root
            self._saved, self._root, self._workspace = chat, chat.folder, chat.workspace
            self._transcript.workdir = str(chat.workspace)
        remove_tree(str(old_root))
        return True

    def forget_saved(self) -> None:
        """The saved chat was deleted (its folder is gone): nothing is saved from now on."""
        with self._lock:
            self._saved = None

    def reopen(self, memory: Any, turns: list[dict[str, Any]]) -> bool:
        """Show a saved chat's conversation (its memory's steps and the messages sent). True if its agent is
        to be restored next (the chat says so until `end_restoring`); False if no step was ever finished."""
        with self._lock:
            self._turns = [t for t in turns if isinstance(t, dict)]
            self._pull_files()
            if memory is None or not memory.steps:
                show_unfinished(self._transcript, [dict(t) for t in self._turns], set(), None)
                return False
            taken = settle_taken(memory)  # before the replay: the stopped step shows as the chat's last
            self._uploads = replay_memory(self._transcript, memory, self._turns, self.files)
            self._show_waiting(memory)
            if taken:
                self._transcript.add_note(TAKEN_NOTE)
            self._files_version += 1
            self._restoring = self._transcript.add_note(RESTORING_NOTE, title=None)
            return True

    def _show_waiting(self, memory: Any) -> None:
        """A decision the saved run waits for (the server restarted, or the session was ended, while it waited):
        its step starts and asks, as in the live run. The memory records no paused step, so the rebuilt chat's
        status line read "running · step 0/10 · <time since the message>" next to the panel's buttons."""
        request = saved_request(None, memory)
        if request is None:
            return
        self._transcript.apply(ev.StepStarted(run_id=request.run_id, step=request.step,
                                              step_type="planning" if request.request_kind == "plan" else "action",
                                              timestamp=request.timestamp))
        self._transcript.apply(request)

    @property
    def restoring(self) -> bool:
        """A reopened chat waiting for its agent (between `reopen` and `end_restoring`)."""
        return self._restoring is not None

    def end_restoring(self) -> None:
        with self._lock:
            if self._restoring is not None and self._restoring in self._transcript.roots:
                self._transcript.roots.remove(self._restoring)
            self._restoring = None
