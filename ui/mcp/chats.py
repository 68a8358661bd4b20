"""What the MCP tools do, on the app's own services: each run a saved chat of the caller's, started and continued
through the same checks as a message sent from the page (ui/app.py `run`): the message's length, the settings the
operator allows, the visitor's run limits and disk share, a sandbox place, the chat's lease, and the upload limits.

Blocking (a run is drained to its end or its pause): the endpoint calls these in a worker thread. A chat started
here lives in the session registry under `mcp:<chat id>` while it is open (idle ones are closed as an API client's
are: AGENTDECK_PAGELESS_IDLE_S); its files stay readable as any saved chat's.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import secrets
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from agents.executor.backend import FileTooLarge
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
from ui.mcp.caller import Caller
from ui.saved.store import SavedChat
from ui.services import Services
from ui.session.session import Session
from ui.session.workspace_access import DiskFiles, WorkspaceFiles
from ui.session.workspace_files import listed_files
from ui.settings import SignInNeededError
from ui.uploads.intake import UploadResult

#: At most this much of a file returned by `read_file` (its default: 256 KB), and this many chats listed.
MAX_READ_BYTES = 1 << 20
DEFAULT_READ_BYTES = 256 << 10
MAX_CHATS_LISTED = 200
HF_SIGN_IN = ("This model runs on Hugging Face inference providers and needs a Hugging Face token: sign in with "
              "Hugging Face on the page and send its session cookie with your MCP requests, or pick another model.")


class McpRefused(ChatRefused):
    """A tool call refused, with what to do instead (the endpoint returns it as the tool's error)."""


_WORDING = DecisionWording(McpRefused, "resume with action 'answer' and your answer")


@dataclass(frozen=True)
class FileIn:
    """A file sent with a task: its name and its content, base64."""
    name: str
    content_base64: str


#: Page handlers find sessions by Gradio's session hash, which a visitor chooses: an MCP chat's registry key is
#: derived from its id with this process's random key, so knowing a chat id never names its session.
_SESSION_KEY = secrets.token_bytes(32)


def session_key(chat_id: str) -> str:
    return "mcp:" + hmac.new(_SESSION_KEY, chat_id.encode(), hashlib.sha256).hexdigest()


class McpChats:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.config = services.config
        self.service = ChatService(services)

    # ----- finding the caller's chat ---------------------------------------------------------------------
    def _chat(self, caller: Caller, chat_id: Any) -> SavedChat:
        """The caller's own chat (any other id, a guessed one, one of another owner's: the same refusal)."""
        chat = self.service.owned_chat(caller.owner, chat_id)
        if chat is None:
            raise McpRefused("No chat of yours has that id (list_chats lists them).")
        return chat

    def _live(self, caller: Caller, chat_id: Any) -> Session:
        """The open session of the caller's chat, to continue it."""
        chat = self._chat(caller, chat_id)
        session = self.service.live(session_key(chat.id), caller.owner, chat.id)
        if session is None:
            raise McpRefused("That chat is not open on the server any more (idle chats are closed after a few "
                             "minutes): its files can still be listed and read; start a new chat to go on.")
        return session

    # ----- tools -------------------------------------------------------------------------------------------
    def run_task(self, caller: Caller, request: Any, task: str, files: list[FileIn] | None = None,
                 chat_files: list[str] | None = None, chat_id: str | None = None, approval_mode: str | None = None,
                 model: str | None = None, max_steps: int | None = None,
                 on_session: Callable[[Session], None] = lambda session: None) -> dict[str, Any]:
        """`on_session` is told the chat's session before its run starts (the endpoint stops it if the call
        is cancelled)."""
        if not isinstance(task, str) or not (task.strip() or files):
            raise McpRefused("Give a task (text), or files to work on.")
        try:
            self.services.gate.check_message(task)
            token = SimpleNamespace(token=caller.hf_token) if caller.hf_token else None
            settings = self.service.settings(model, max_steps, token)
        except SignInNeededError:
            raise McpRefused(HF_SIGN_IN) from None
        except Exception as exc:  # gr.Error: the page's refusal, said the same way
            raise McpRefused(refusal_text(exc)) from None
        if len(files or ()) + len(chat_files or ()) > MAX_FILES_PER_TASK:
            raise McpRefused(f"At most {MAX_FILES_PER_TASK} files go with one task.")
        if chat_id is None:
            if chat_files:
                raise McpRefused("chat_files names files of an existing chat: give its chat_id too.")
            chat = self.services.store.create(caller.owner)
            session = self.service.install(session_key(chat.id), chat, caller.visitor)
        else:
            session = self._live(caller, chat_id)
        kept = self._chat_files(session, chat_files or [])
        on_session(session)
        try:
            self.service.admit(session, request, approval_mode, task)  # the lease's refusal or the gate's
        except Exception as exc:
            raise McpRefused(refusal_text(exc)) from None
        with tempfile.TemporaryDirectory(prefix="agentdeck-mcp-in-") as folder:
            paths = self._write_files(Path(folder), files or [])
            try:
                started = self.service.run(session, request, task, paths, settings, kept)
            except Exception as exc:
                raise McpRefused(refusal_text(exc)) from None
        return self.outcome(session, started=started)

    def resume(self, caller: Caller, chat_id: str, decision_id: str, action: str, edited: Any = None,
               reason: str = "", answer: str = "",
               on_session: Callable[[Session], None] = lambda session: None) -> dict[str, Any]:
        session = self._live(caller, chat_id)
        on_session(session)
        pending = self.service.pending(session, decision_id)
        if pending is None:
            raise McpRefused("That chat has no pending decision with this id (it was made, or it expired).")
        made = decision(pending.request_kind, action, edited, reason, answer, _WORDING)
        try:
            self.service.resolve(session, pending, made, str(answer))
        except LeaseRefused as exc:
            raise McpRefused(str(exc)) from None
        except Exception as exc:
            raise McpRefused(refusal_text(exc)) from None
        self.service.go_on(session)
        return self.outcome(session)

    def list_chats(self, caller: Caller) -> list[dict[str, Any]]:
        return [{"chat_id": meta.id, "title": meta.title, "updated": meta.updated}
                for meta in self.service.chats(caller.owner, MAX_CHATS_LISTED)]

    def _files(self, chat: SavedChat) -> WorkspaceFiles:
        """The chat's files: through the sandbox of a session that has it open (a page's or this server's: its
        host may keep the workspace elsewhere), else its saved folder (no sandbox holds it)."""
        for session in self.services.registry.sessions():
            saved = session.record.saved
            if saved is not None and saved.folder == chat.folder:
                return session.record.files
        return DiskFiles(chat.workspace)

    def list_files(self, caller: Caller, chat_id: str) -> list[dict[str, Any]]:
        files = self._files(self._chat(caller, chat_id))
        listed = files.list()
        return [{"name": name, "bytes": listed[name].size}
                for name in (os.path.relpath(path, files.root) for path in listed_files([], [], files))]

    def read_file(self, caller: Caller, chat_id: str, name: str, max_bytes: int | None = None) -> dict[str, Any]:
        files = self._files(self._chat(caller, chat_id))
        cap = min(MAX_READ_BYTES, max(1, int(max_bytes or DEFAULT_READ_BYTES)))
        if not isinstance(name, str) or not name or len(name) > 1024 or name.startswith("."):
            raise McpRefused("Give a file's name as list_files gives it.")
        try:
            data = files.read(name, cap)
        except FileTooLarge as exc:
            raise McpRefused(f"{exc}: ask for more with max_bytes (at most {MAX_READ_BYTES:,}).") from None
        except (OSError, ValueError):  # no such file, a link, a folder, a path out of the workspace
            raise McpRefused("No such file in that chat (list_files lists them).") from None
        try:
            return {"name": name, "bytes": len(data), "text": data.decode("utf-8")}
        except UnicodeDecodeError:
            return {"name": name, "bytes": len(data), "base64": base64.b64encode(data).decode("ascii")}

    # ----- parts -------------------------------------------------------------------------------------------
    def _write_files(self, folder: Path, files: list[FileIn]) -> list[tuple[str, str]]:
        """Each sent file decoded into `folder` under a name of ours; (path, its name) as the page's uploads
        are given to `start_run`, which checks and copies them as it does an upload."""
        cap = self.config.max_upload_bytes
        paths = []
        for index, item in enumerate(files):
            if len(item.content_base64) > (cap // 3 + 1) * 4 + 4:
                raise McpRefused(f"The file {item.name[:80]!r} is over the upload limit of {cap:,} bytes.")
            try:
                data = base64.b64decode(item.content_base64, validate=True)
            except (binascii.Error, ValueError):
                raise McpRefused(f"The file {item.name[:80]!r} is not valid base64.") from None
            path = folder / str(index)
            path.write_bytes(data)
            paths.append((str(path), item.name[:255] or f"file{index}"))
        return paths

    @staticmethod
    def _chat_files(session: Session, names: list[str]) -> list[UploadResult]:
        """Files already in the chat's folder (plain names, regular files, never a link), sent again with the task."""
        kept = []
        workspace = session.record.workspace
        for name in names:
            if not isinstance(name, str) or not name or "/" in name or "\\" in name or "\0" in name \
                    or name.startswith(".") or len(name) > 255:
                raise McpRefused(f"{str(name)[:80]!r} is not the name of a file in the chat (list_files lists them).")
            try:
                size = session.record.files.stat(name).size  # a regular file, never a link
            except OSError:
                raise McpRefused(f"{name[:80]!r} is not a file in the chat (list_files lists them).") from None
            kept.append(UploadResult(original_name=name, size_bytes=size, safe_name=name, path=workspace / name))
        return kept

    def outcome(self, session: Session, started: bool = True) -> dict[str, Any]:
        """What a run came to: its answer, a decision it waits for (with the id `resume` takes), or why not
        (`started` False: nothing ran)."""
        state = ChatService.state(session, started)
        pending, finished = state.pending, state.finished
        result: dict[str, Any] = {"chat_id": state.chat_id}
        if pending is not None:
            result.update(status="needs_decision", decision={  # its own id and kind last: a payload's never hide them
                **state.decision_details, "id": pending.request_id, "kind": pending.request_kind})
        elif finished is not None:
            status = {"success": "finished", "max_steps": "finished", "interrupted": "stopped"}.get(finished.state,
                                                                                                 "failed")
            result.update(status=status, answer=None if finished.output is None else clip(str(finished.output)),
                          steps=finished.steps, **({"error": clip(finished.error)} if finished.error else {}))
        else:  # nothing ran (files refused, an agent that could not start): the chat's last note says why
            result.update(status="not_started", note=state.last_note)
        result["files"] = [os.path.relpath(p, session.record.workspace)
                           for p in listed_files([], [], session.record.files)]
        return result
