"""What the API endpoints do, on the app's own services, for one caller (ui/api/caller.py): run a task in a chat
of theirs, list their chats and a chat's files, answer the decision a run waits for, stop a run.

No Gradio here: the endpoints (ui/api/endpoints.py) call these and turn `ApiRefused` into the error a client
gets, so another front (an MCP server, say) can use them the same way. Every run goes through the page's own
checks (ui/app.py `run`): the message's length, the settings the operator allows, the caller's sign-in for
Hugging Face models, the chat's lease, the visitor's run limits and disk share, a sandbox place, the upload
limits; and with the page's approval modes a run pauses for a decision here as it does there.

A chat started or continued here lives in the session registry under a random key of this module's (`api:` and
128 random bits), never under a name a caller sends: Gradio's session hash is the caller's to choose, and the
page's handlers find sessions by it, so a key made of a chat id could be named by anyone who learnt the id. An
idle one is closed as any page-less session is (AGENTDECK_PAGELESS_IDLE_S); the chat stays on disk and the
next call reopens it, its memory going to the next run's agent.
"""
from __future__ import annotations

import os
import secrets
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents.answer_checks.marks import answer_mark
from agents.decisions import APPROVAL_MODES
from agents.events import AnswerCheck
from ui.api.caller import ApiCaller
from ui.chat.file_links import FileLinker
from ui.chat.formatting import format_value
from ui.chat.published_files import NotPublishable
from ui.chat_service import (
    ACTIONS,  # noqa: F401 (part of this module's interface)
    MAX_FILES_PER_TASK,
    MAX_TEXT_CHARS,  # noqa: F401 (part of this module's interface)
    ChatRefused,
    ChatService,
    DecisionWording,
    LeaseRefused,
    clip,
    decision,
    refusal_text,
)
from ui.saved.store import ChatStoreError, SavedChat
from ui.services import Services
from ui.session.registry import ServerBusyError
from ui.session.session import Session
from ui.settings import RunSettings, SignInNeededError
from ui.web.gradio_compat import file_url, page_file_url, private_uploads_root, root_url_of

#: At most this many chats are listed.
MAX_CHATS_LISTED = 500
#: What a run came to, as `status` says it.
STATUSES = ("finished", "out_of_steps", "stopped", "failed", "needs_decision", "not_started")
_STATUS_OF_END = {"success": "finished", "max_steps": "out_of_steps", "interrupted": "stopped", "error": "failed"}


class ApiRefused(ChatRefused):
    """A call refused, with what to do instead (the client gets this message)."""


_WORDING = DecisionWording(ApiRefused, "decide with action 'answer' and your answer as text",
                           tool_call_as_json_text=True, trim_edits=True)


@dataclass(frozen=True)
class FileIn:
    """A file sent with a task: where the upload route stored it, and its name."""
    path: str
    name: str


def uploaded_file(path: Any, name: Any) -> FileIn:
    """A file a caller names as sent with a task: only one the upload route stored (a regular file under
    its private folder, no link anywhere on the way). Anything else (a server path, another folder of Gradio's,
    a published copy of someone's chat) is refused as not uploaded."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise ApiRefused("A file must be uploaded with the request (gradio_client: handle_file(path)).")
    root = str(private_uploads_root())
    named, real, real_root = os.path.abspath(path), os.path.realpath(path), os.path.realpath(root)
    below = os.path.relpath(real, real_root)
    try:
        info = os.lstat(real)
    except OSError:
        info = None
    # Inside the folder as it really is, and named by that same path below the folder (as the folder is named, or
    # as it really is): no link anywhere below the folder.
    if (below.startswith("..") or below == "." or info is None or not stat.S_ISREG(info.st_mode)
            or named not in {os.path.join(os.path.abspath(root), below), os.path.join(real_root, below)}):
        raise ApiRefused("A file must be uploaded with the request (gradio_client: handle_file(path)); "
                         f"{os.path.basename(path)[:80]!r} was not.")
    shown = name if isinstance(name, str) and name.strip() else os.path.basename(real)
    return FileIn(real, os.path.basename(shown)[:255])


class ApiChats:
    """The caller-facing operations. One per server; holds only which session runs which of the API's chats."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.config = services.config
        self.service = ChatService(services)
        self._keys: dict[tuple[str, str], str] = {}  # (owner, chat id) -> the registry key of its API session
        self._lock = threading.Lock()

    # ----- finding the caller's chat ----------------------------------------------------------------------
    def _chat(self, caller: ApiCaller, chat_id: Any) -> SavedChat:
        """The caller's own chat. Another owner's id, a deleted one, a guessed one: the same refusal."""
        chat = self.service.owned_chat(caller.owner, chat_id)
        if chat is None or not chat.kept:
            raise ApiRefused("No chat of yours has that id (list_chats lists your chats and their ids).")
        return chat

    def _live(self, caller: ApiCaller, chat_id: str) -> Session | None:
        """The open API session of the caller's chat, if there is one."""
        with self._lock:
            key = self._keys.get((caller.owner, chat_id))
        return self.service.live(key, caller.owner, chat_id)

    def _new_key(self, owner: str, chat_id: str) -> str:
        key = f"api:{secrets.token_hex(16)}"
        registry = self.services.registry
        with self._lock:
            self._keys[(owner, chat_id)] = key
            if len(self._keys) > 4 * max(64, len(registry)):  # forget chats whose sessions are gone
                self._keys = {k: v for k, v in self._keys.items() if registry.peek(v) is not None or v == key}
        return key

    def _open(self, caller: ApiCaller, chat: SavedChat, restore: bool) -> Session:
        """The caller's chat in an API session: the open one, else a new one in its folder; with `restore`,
        its conversation is loaded so the next run's agent gets its memory (and rebuilds its variables)."""
        session = self._live(caller, chat.id)
        if session is not None:
            return session
        memory = None
        turns: list[Any] = []
        if restore:
            try:
                memory, metadata = self.services.store.load_memory(chat)
            except ChatStoreError as exc:  # refused as a whole (changed on disk, another server's...)
                raise ApiRefused(f"That chat cannot be continued: {exc}") from None
            turns = metadata.get("turns") or []
        session = self.service.install(self._new_key(caller.owner, chat.id), chat, caller.visitor)
        if restore and session.record.reopen(memory, turns):
            session.restore_later(memory)  # built by the next run, inside its limits
        return session

    # ----- runs ---------------------------------------------------------------------------------------------
    def run_task(self, caller: ApiCaller, task: str, files: list[FileIn] | None = None, chat_id: str = "",
                 approval_mode: str = "", model: str = "", max_steps: int | None = None) -> dict[str, Any]:
        """Run the agent on `task` in a new chat of the caller's, or in the one `chat_id` names (its memory and
        files go on); block until the run ends or waits for a decision. Returns `outcome`."""
        files = list(files or [])
        if not isinstance(task, str):
            raise ApiRefused("The task must be text.")
        if len(files) > MAX_FILES_PER_TASK:
            raise ApiRefused(f"At most {MAX_FILES_PER_TASK} files go with one task.")
        if approval_mode and approval_mode not in APPROVAL_MODES:
            raise ApiRefused(f"approval_mode must be one of {', '.join(APPROVAL_MODES)} (or empty: autonomous).")
        if not (task.strip() or files):
            raise ApiRefused("Send a task (text), or files with it.")
        self.services.gate.check_message(task)  # first: nothing of a message too long is kept
        session = self._open(caller, self._chat(caller, chat_id), restore=True) if chat_id else None
        settings = self._settings(session, model, max_steps, caller.hf_token)
        if session is None:
            chat = self.services.store.create(caller.owner)
            session = self.service.install(self._new_key(caller.owner, chat.id), chat, caller.visitor)
        if session.unfinished():
            raise ApiRefused("A run is going on in that chat: wait for it, answer its decision (decide) or stop it.")
        try:
            self.service.admit(session, caller.request, approval_mode or "autonomous")
        except LeaseRefused as exc:
            why = str(exc)
            raise ApiRefused("That chat is open in a browser tab, which continued it last: continue it there, or "
                             "close that tab's chat first." if "another tab" in why else why) from None
        started = self.service.run(session, caller.request, task, [(f.path, f.name) for f in files], settings)
        return self.outcome(caller, session, started=started)

    def _settings(self, session: Session | None, model: str, max_steps: int | None, token: Any) -> RunSettings:
        """The run's settings: the ones asked for, checked as the page's form is; none asked for in a chat
        that has an agent, that agent's own (so it goes on rather than being rebuilt)."""
        kept = session.agent_settings if session is not None else None
        if kept is not None and not model and max_steps is None:
            return kept
        try:
            return self.service.settings(model or None, max_steps, token)
        except SignInNeededError as exc:
            raise ApiRefused(f"The model {exc} runs on Hugging Face and needs the caller's Hugging Face sign-in: "
                             "pick another model (model=...) or sign in.") from None

    def decide(self, caller: ApiCaller, chat_id: str, decision_id: str, action: str, text: str = "") -> dict[str, Any]:
        """Answer the decision the chat's run waits for (approve, reject with a reason, edit with the new plan,
        code or JSON arguments, or answer the agent's question), then go on until the run ends or waits again."""
        chat = self._chat(caller, chat_id)
        session = self._live(caller, chat.id) or self._reopen_paused(caller, chat)
        pending = self.service.pending(session, decision_id) if session is not None else None
        if session is None or pending is None:
            raise ApiRefused("That chat has no pending decision with this id (it was made, it expired, or the run "
                             "was stopped).")
        text = str(text or "")
        made = decision(pending.request_kind, action, text, text, text, _WORDING)
        try:
            self.service.resolve(session, pending, made, text)
        except LeaseRefused as exc:  # one tab, one replica runs it
            why = str(exc)
            raise ApiRefused("That chat was continued last elsewhere (a browser tab or another client, maybe on "
                             "another server): its run goes on there." if "another tab" in why else why) from None
        except Exception as exc:  # made meanwhile, or refused by the agent
            raise ApiRefused(refusal_text(exc)) from None
        self.service.go_on(session)
        return self.outcome(caller, session)

    def _reopen_paused(self, caller: ApiCaller, chat: SavedChat) -> Session | None:
        """A chat whose run ended at a decision in another process (another replica, or before a restart), as
        this caller's session here: its agent built and its variables rebuilt (inside the caller's run limits),
        so the answer resumes the run here. None when its saved memory waits for no decision."""
        session = self._open(caller, chat, restore=True)
        if session.agent is not None or getattr(session.memory, "pending", None) is None:
            return session
        settings = self._settings(session, "", None, caller.hf_token)
        memory = session.memory
        with self.services.gate.rebuilding(caller.request, session, memory) as allowed:
            if not allowed:
                raise ApiRefused("Over your run limits: answer again in a minute (reopening the chat re-runs its "
                                 "code).")
            try:
                self.services.registry.make_room(session)  # its sandbox counts against the server's cap
            except ServerBusyError as exc:
                raise ApiRefused(f"The server is busy ({exc}): answer again in a while.") from None
            session.restore_agent(memory, settings)
        return session

    def stop(self, caller: ApiCaller, chat_id: str) -> bool:
        """Stop the chat's run (True if one was going on)."""
        session = self._live(caller, self._chat(caller, chat_id).id)
        return session is not None and self.services.leases.stop(session)

    # ----- reading ------------------------------------------------------------------------------------------
    def list_chats(self, caller: ApiCaller) -> list[dict[str, Any]]:
        """The caller's chats, newest first: id, title, last change (seconds since the epoch), steps."""
        return [{"chat_id": meta.id, "title": meta.title, "updated": float(meta.updated), "steps": int(meta.steps)}
                for meta in self.service.chats(caller.owner, MAX_CHATS_LISTED)]

    def chat_files(self, caller: ApiCaller, chat_id: str) -> list[dict[str, Any]]:
        """The chat's files (uploads and what the agent wrote), each with the URL of its published copy."""
        session = self._open(caller, self._chat(caller, chat_id), restore=False)
        return self._files(session, self._url_maker(caller))

    # ----- results ------------------------------------------------------------------------------------------
    def _url_maker(self, caller: ApiCaller) -> Callable[[str], str]:
        """A published copy's URL: absolute (the app's URL as the caller reached it) where known."""
        root = root_url_of(caller.request)
        return (lambda path: file_url(path, root)) if root else page_file_url

    @staticmethod
    def _files(session: Session, url_of: Callable[[str], str]) -> list[dict[str, Any]]:
        found = []
        workspace = session.record.workspace
        for path in session.record.workspace_files():
            try:
                published = session.record.publish(path)
            except NotPublishable:  # a link the code left, a file past the chat's share: not offered
                continue
            found.append({"name": os.path.relpath(path, workspace), "url": url_of(published.path),
                          "bytes": os.path.getsize(published.path)})
        return found

    def outcome(self, caller: ApiCaller, session: Session, started: bool = True) -> dict[str, Any]:
        """What a run came to: its answer (file names in it linked to their copies' absolute URLs), the decision
        it waits for, or why it did not run; with the chat's id and files."""
        url_of = self._url_maker(caller)
        state = ChatService.state(session, started)
        result: dict[str, Any] = {"chat_id": state.chat_id or "", "status": "not_started",
                                  "answer": "", "note": "", "decision": None, "steps": 0, "check": None}
        pending, finished = state.pending, state.finished
        if pending is not None:
            result.update(status="needs_decision", decision={
                "id": pending.request_id, "kind": pending.request_kind, "details": state.decision_details},
                note="The run waits for a decision: answer it with /decide (approve, reject, edit or answer).")
        elif finished is not None:
            end = str(getattr(finished.state, "value", finished.state))
            result.update(status=_STATUS_OF_END.get(end, "failed"), steps=int(finished.steps),
                          note=clip(finished.error or ""))
            if finished.output is not None:
                value = finished.output
                text = format_value(value)
                if isinstance(value, str):
                    text = FileLinker(str(session.record.workspace), session.record.publish, url_of).link(text)
                result["answer"] = clip(text)
                check = _answer_check(state.steps, getattr(finished, "run_id", None))
                if check is not None:  # the mark the page shows under the answer: a caller must see it too
                    result["check"] = check.as_dict()
                    result["note"] = result["note"] or clip(answer_mark(check).replace("**", ""))
            if not result["answer"] and not result["note"]:  # no answer (out of steps): what the page told the person
                result["note"] = state.last_note.replace("**", "")
        else:  # nothing ran (its files refused, an agent that could not start): the chat's last note says why
            result["note"] = state.last_note
        result["files"] = self._files(session, url_of)
        return result


def _answer_check(steps: list[Any], run_id: str | None) -> AnswerCheck | None:
    """What the app checked of the run's answer (its last answer step, of this run where the run is known), as the
    page marks it: "not sure" and why, or unchecked. Why: an API caller got the embedded model's wrong answers
    with nothing to tell them apart from right ones."""
    for step in reversed(steps):
        if getattr(step, "step_type", "") == "final_answer":
            if run_id and getattr(step, "run_id", "") and step.run_id != run_id:
                return None
            return AnswerCheck.from_dict(getattr(step, "check", None))
    return None
