"""The on-disk store of saved chats: one folder per chat, grouped by owner, memory signed with a server secret.

Layout under the data folder (`AGENTDECK_DATA_DIR`):

    <data>/secret                          the signing secret when AGENTDECK_SECRET is not set (mode 0600)
    <data>/owners/<owner>/current          the id of the chat this owner had open last ("" after New chat)
    <data>/owners/<owner>/approval_mode    the approval mode this owner chose last (the page shows it again)
    <data>/owners/<owner>/<chat-id>/meta.json     {"id", "title", "created", "updated", "steps"}
    <data>/owners/<owner>/<chat-id>/memory.json   the agent's memory, signed (agents.memory.serialize)
    <data>/owners/<owner>/<chat-id>/workspace/    uploads and the agent's files (the sandbox's working dir)
    <data>/owners/<owner>/<chat-id>/exports/      Markdown / notebook exports

`<owner>` is the SHA-256 of the browser's random token (kept in the browser's localStorage), or an HMAC of
the user name when login is on, so a folder name never reveals the token. Chat ids are 32 random hex
characters; every id and owner key is checked against its pattern before it touches a path, and the
resolved folder must lie inside the owner's folder, so a guessed or crafted id (`../x`) reaches nothing.
A chat folder without meta.json was never used (no message sent) and is not listed.

Several replicas (issue 28): the small files (`meta.json`, `memory.json`, `current`, `approval_mode`, and the
secret when AGENTDECK_SECRET is unset) are blobs of a `BlobStore` (ui/shared/blobs.py) named by the same
relative paths; the default stores them as the files above, `AGENTDECK_CHAT_STORE=s3://...` in object storage
that every replica reads. Each write names the version it last saw, so two replicas cannot lose each other's
update (a conflicting memory save is refused with a message; meta is re-read and written again). The
workspace is the local folder of the replica that serves the chat, copied into a shared store by the chat's
record (ui/saved/workspace_mirror.py) so another replica can bring it back; exports stay local. Deleted-chat
tombstones are in the shared state (ui/shared/state.py: Redis when configured), so a tab on any replica sees a delete.
"""
from __future__ import annotations

import builtins
import hashlib
import hmac
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from agents.executor.tree_walk import remove_tree
from agents.memory.memory import AgentMemory
from ui.saved import memory_blobs, meta_blobs, titles
from ui.saved.chat_meta import (  # noqa: F401 (the store's names, as callers import them)
    MAX_TITLE_CHARS,
    TOKEN_BYTES,
    ChatMeta,
    clean_title,
    new_token,
    parse_meta,
    valid_chat_id,
    valid_token,
)
from ui.saved.data_folder import (
    ChatStoreError,
    secret_file,
    secret_is_configured,
    server_secret,
)
from ui.saved.key_change import note_secret_at_start, secret_id
from ui.saved.meta_blobs import META_MAX_BYTES
from ui.saved.model_titles import BY_MODEL, BY_PERSON, BY_TASK
from ui.saved.owner_prefs import OwnerPreferences
from ui.shared.blobs import (
    ANY,
    MISSING,
    BlobStore,
    BlobTooLarge,
    Expect,
    LocalBlobs,
)
from ui.shared.state import MemoryState, SharedState

#: Deleted chats remembered so another tab showing one cannot save it again (ChatStore.delete), this long.
DELETED_REMEMBERED_S = 30 * 24 * 3600.0
_OWNER = re.compile(r"^[0-9a-f]{64}$")


class SavedChat:
    """One chat's folder. Created by the store; `kept` once the first message was sent (meta.json exists)."""

    def __init__(self, store: ChatStore, owner: str, chat_id: str, folder: Path) -> None:
        self.store = store
        self.owner = owner
        self.id = chat_id
        self.folder = folder  # the local working copy: workspace and exports
        self.workspace = folder / "workspace"
        self.key = f"owners/{owner}/{chat_id}"  # its blobs: <key>/meta.json, <key>/memory.json
        self.meta_path = folder / "meta.json"  # where the default (local) store keeps the blobs
        self.memory_path = folder / "memory.json"
        self.exports = folder / "exports"
        # The memory's version this object last read or wrote (ANY: none seen yet, the next save overwrites).
        self.memory_version: Expect = ANY

    @property
    def kept(self) -> bool:
        try:
            return self.store.blobs.get(f"{self.key}/meta.json", max_bytes=META_MAX_BYTES) is not None
        except BlobTooLarge:
            return True  # there is an entry, an unreadable one (`_read_meta` lists it as damaged)

    @property
    def deleted(self) -> bool:
        """Deleted (from any tab) since this server started: nothing of it may be saved again."""
        return self.store.was_deleted(self.owner, self.id)

    def meta(self) -> ChatMeta | None:
        return self.store._read_meta(self.key, self.id)

    def save(self, reason: str, turns: list[dict[str, Any]], memory: AgentMemory | None, settings: Any) -> None:
        """The session's save (ui/session/chat_record.py): see ChatStore.save_chat."""
        self.store.save_chat(self, reason, turns, memory, settings)

    def __repr__(self) -> str:
        return f"SavedChat({self.id})"


class ChatStore(OwnerPreferences):
    def __init__(self, data_dir: str | Path, secret: bytes | None = None, blobs: BlobStore | None = None,
                 state: SharedState | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.root = self.data_dir / "owners"
        self.root.mkdir(parents=True, exist_ok=True)
        self.blobs: BlobStore = blobs if blobs is not None else LocalBlobs(self.data_dir)
        if secret is None:  # the server's own secret: say at start-up when it changed (ui/saved/key_change.py)
            file_was_missing = not secret_is_configured() and isinstance(self.blobs, LocalBlobs) \
                and not secret_file(self.data_dir).exists()
            self.secret = server_secret(self.data_dir, self.blobs)
            note_secret_at_start(self.data_dir, self.secret, self._has_saved_chats(), file_was_missing)
        else:
            self.secret = secret
        self.secret_id = secret_id(self.secret)
        self._lock = threading.RLock()
        # Deleted chats' tombstones: another tab (on any replica) may still show one, and its next save would
        # bring the chat back (folder, files and all) after the person deleted it.
        self.state: SharedState = state if state is not None else MemoryState()

    def _has_saved_chats(self) -> bool:
        """Whether any chat was kept here (a meta.json in a chat folder); stops at the first one found."""
        try:
            return any((chat / "meta.json").exists() for owner in self.root.iterdir() if _OWNER.match(owner.name)
                       for chat in owner.iterdir() if valid_chat_id(chat.name))
        except OSError:
            return False

    # ----- owners ---------------------------------------------------------------------------------
    def owner_for_token(self, token: str) -> str:
        if not valid_token(token):
            raise ChatStoreError("This browser's identity is not valid.")
        return hashlib.sha256(token.encode("ascii")).hexdigest()

    def owner_for_user(self, username: str) -> str:
        return hmac.new(self.secret, b"user:" + str(username).encode("utf-8"), hashlib.sha256).hexdigest()

    def browser_state_secret(self) -> str:
        """A stable key for gr.BrowserState's encryption, derived from (never equal to) the server secret."""
        return hmac.new(self.secret, b"agentdeck-browser-state", hashlib.sha256).hexdigest()[:32]

    def _owner_dir(self, owner: str) -> Path:
        if not isinstance(owner, str) or not _OWNER.match(owner):
            raise ChatStoreError("Unknown owner.")
        return self.root / owner

    # ----- chats ----------------------------------------------------------------------------------
    def create(self, owner: str) -> SavedChat:
        """A new chat folder (its workspace ready); it is listed once the first message is saved."""
        owner_dir = self._owner_dir(owner)
        while True:
            chat_id = secrets.token_hex(16)
            folder = owner_dir / chat_id
            try:
                folder.mkdir(parents=True)
                break
            except FileExistsError:
                continue
        chat = SavedChat(self, owner, chat_id, folder)
        chat.workspace.mkdir()
        chat.memory_version = MISSING  # new: its first save creates the memory, never overwrites one
        return chat

    def get(self, owner: str, chat_id: Any) -> SavedChat | None:
        """The owner's chat with this id, or None (bad id, another owner's id, deleted)."""
        if not valid_chat_id(chat_id) or self.was_deleted(owner, chat_id):
            return None  # deleted: on another replica its local folder may still be there
        owner_dir = self._owner_dir(owner)
        folder = owner_dir / chat_id
        try:
            folder.resolve().relative_to(owner_dir.resolve())
        except (ValueError, OSError):
            return None
        if not folder.is_dir():
            if not self._in_store(owner, chat_id):
                return None
            (folder / "workspace").mkdir(parents=True, exist_ok=True)  # kept by another replica: a local copy
        return SavedChat(self, owner, chat_id, folder)

    def _in_store(self, owner: str, chat_id: str) -> bool:
        names = self.blobs.children(f"owners/{owner}/{chat_id}")
        return "meta.json" in names or "memory.json" in names

    def list(self, owner: str) -> list[ChatMeta]:
        """The owner's saved chats, newest first (chats never used are left out)."""
        self._owner_dir(owner)
        found = []
        for name in self.blobs.children(f"owners/{owner}"):
            if valid_chat_id(name):
                meta = self._read_meta(f"owners/{owner}/{name}", name)
                if meta is not None:
                    found.append(meta)
        return sorted(found, key=lambda m: (m.updated, m.created), reverse=True)

    def rename(self, owner: str, chat_id: Any, title: str) -> ChatMeta:
        chat = self.get(owner, chat_id)
        meta = chat.meta() if chat else None
        if chat is None or meta is None:
            raise ChatStoreError("That chat does not exist (it may have been deleted).")
        clean = clean_title(title)
        return self._update_meta(chat, lambda old: replace(old or ChatMeta(chat.id, "Untitled chat", time.time(),
                                                                           time.time()),
                                                           title=clean or (old.title if old else "Untitled chat"),
                                                           title_by=BY_PERSON if clean else (old or meta).title_by))

    def set_model_title(self, chat: SavedChat, title: str) -> bool:
        """The chat's title written by its model (ui/session/title_job.py), unless meanwhile the person renamed
        the chat, a model titled it, or it was deleted: False then, and nothing changes."""
        if chat.deleted or chat.meta() is None:
            return False
        others = [m.title for m in self.list(chat.owner) if m.id != chat.id]
        written = titles.distinct(clean_title(title), others)

        def change(old: ChatMeta | None) -> ChatMeta:
            if old is None or old.damaged or old.title_by != BY_TASK:
                raise _Unchanged  # deleted, renamed or titled meanwhile: nothing is written
            return replace(old, title=written, title_by=BY_MODEL)

        try:
            self._update_meta(chat, change)
        except _Unchanged:
            return False
        return True

    def delete(self, owner: str, chat_id: Any) -> bool:
        chat = self.get(owner, chat_id)
        if chat is None:
            return False
        with self._lock:
            self.state.mark(_tombstone(owner, chat.id), DELETED_REMEMBERED_S)
            self.blobs.delete_tree(chat.key)
            remove_tree(str(chat.folder))
            if self.current(owner) == chat.id:
                self.set_current(owner, None)
        return True

    def was_deleted(self, owner: str, chat_id: str) -> bool:
        return self.state.is_marked(_tombstone(owner, chat_id))

    def sweep_unused(self, older_than_s: float = 24 * 3600.0, now: float | None = None) -> int:
        """Delete chat folders that never got a message (no meta.json) and are older than `older_than_s`."""
        now = now or time.time()
        removed = 0
        remote = not isinstance(self.blobs, LocalBlobs)  # a kept chat's meta.json is in the store, not here
        if not self.root.is_dir():
            return 0
        for owner_dir in self.root.iterdir():
            if not owner_dir.is_dir() or not _OWNER.match(owner_dir.name):
                continue
            for folder in owner_dir.iterdir():
                if valid_chat_id(folder.name) and folder.is_dir() and not (folder / "meta.json").exists() \
                        and not (remote and self._in_store(owner_dir.name, folder.name)):
                    try:
                        if now - folder.stat().st_mtime > older_than_s:
                            remove_tree(str(folder))
                            removed += 1
                    except OSError:
                        pass
            try:  # an owner with nothing left (never sent a message, chose no mode)
                owner_dir.rmdir()
            except OSError:
                pass
        return removed

    # ----- meta -----------------------------------------------------------------------------------
    def _read_meta(self, chat_key: str, chat_id: str) -> ChatMeta | None:
        return meta_blobs.read(self.blobs, chat_key, chat_id)

    def _update_meta(self, chat: SavedChat, change: Callable[[ChatMeta | None], ChatMeta]) -> ChatMeta:
        return meta_blobs.update(self.blobs, chat.key, chat.id, change)

    def touch(self, chat: SavedChat, title: str | None = None, steps: int | None = None,
              text: str | None = None, retitle: bool = False) -> ChatMeta:
        def change(old: ChatMeta | None) -> ChatMeta:
            now = time.time()
            kept = old.title if old and old.title != "Untitled chat" and not (retitle and clean_title(title or "")) \
                else None
            return ChatMeta(id=chat.id, title=kept or clean_title(title or "") or "Untitled chat",
                            title_by=old.title_by if kept and old else BY_TASK,
                            created=old.created if old else now,
                            updated=now, steps=steps if steps is not None else (old.steps if old else 0),
                            text=text if text is not None else (old.text if old else ""))

        return self._update_meta(chat, change)

    # ----- memory ---------------------------------------------------------------------------------
    def chat_key(self, chat: SavedChat) -> bytes:
        """The key that signs one chat's memory: bound to its owner and id, so a signed file copied into
        another owner's folder, or under another chat id, does not verify there."""
        label = f"chat-memory\0{chat.owner}\0{chat.id}".encode()
        return hmac.new(self.secret, label, hashlib.sha256).digest()

    def save_memory(self, chat: SavedChat, memory: AgentMemory, metadata: dict[str, Any]) -> None:
        """Write the chat's signed memory over the version this SavedChat last read or wrote. Raises
        ChatStoreError (nothing written) if another tab or replica saved the chat since: its update stands."""
        chat.memory_version = memory_blobs.write(self.blobs, f"{chat.key}/memory.json", memory, self.chat_key(chat),
                                                 self.secret_id, metadata, expect=chat.memory_version)

    def load_memory(self, chat: SavedChat) -> tuple[AgentMemory | None, dict[str, Any]]:
        """The chat's memory and the signed metadata saved with it; (None, {}) if no run was saved yet.

        Raises ChatStoreError with a clear sentence when the file was changed, comes from another server,
        is too big or unreadable: nothing of it is used then."""
        memory, metadata, chat.memory_version = memory_blobs.read(self.blobs, f"{chat.key}/memory.json",
                                                                  self.chat_key(chat), self.secret_id)
        return memory, metadata

    def _has_memory(self, chat: SavedChat) -> bool:
        if isinstance(chat.memory_version, str):
            return True
        return "memory.json" in self.blobs.children(chat.key)

    def save_chat(self, chat: SavedChat, reason: str, turns: builtins.list[dict[str, Any]],
                  memory: AgentMemory | None, settings: Any) -> None:
        """Called by the session: when the person sends a message ("start": their message is kept even if the
        run never finishes a step), after each finished step ("step"), at decision pauses and after a run, and
        when Retry or Edit rewinds the chat to before its last message ("rewind").
        `turns`: what the person sent; `memory`: the conversation (None before the first agent); `settings`:
        the agent's RunSettings."""
        if chat.deleted:
            return  # deleted in another tab while this one showed it: the delete stands
        turns = [t for t in turns if isinstance(t, dict)]
        if not turns and not chat.kept:
            return  # nothing sent in it yet (a run stopped by New chat saving into the new one): no empty entry
        steps = sum(1 for s in memory.steps if s.step_type == "action") if isinstance(memory, AgentMemory) else None
        if isinstance(memory, AgentMemory) and (memory.steps or reason == "rewind"
                                                or (turns and not self._has_memory(chat))):
            # Every turn is kept, also one whose run has no step on disk yet: a reopened chat shows it. A rewound
            # chat (ui/session/rewind.py) is written even with no step left, over the version it undid.
            metadata = {"turns": turns, "settings": settings_dict(settings)}
            self.save_memory(chat, memory, metadata)
        if reason == "step":
            return  # the list's entry (meta) changes when a message is sent and when a run ends
        answers = [str(getattr(step, "output", "")) for step in memory.steps if step.step_type == "final_answer"] \
            if isinstance(memory, AgentMemory) else []
        title, retitle = self._title_for(chat, turns, answers)
        self.touch(chat, title=title, steps=steps, text=titles.search_text(turns, answers), retitle=retitle)
        self.set_current(chat.owner, chat.id)

    def _title_for(self, chat: SavedChat, turns: builtins.list[dict[str, Any]],
                   answers: builtins.list[str]) -> tuple[str, bool]:
        """(title, whether it replaces the chat's title): from the first message and its files, unlike the owner's
        other chats' titles (ui/saved/titles.py). A title numbered to tell it apart is replaced by one with the
        chat's answer once there is one; any other title stays (the person may have renamed the chat)."""
        meta = chat.meta()
        numbered = meta is not None and titles.NUMBERED.search(meta.title) is not None
        if meta is not None and meta.title != "Untitled chat" and (meta.title_by != BY_TASK
                                                                  or not (numbered and answers)):
            return meta.title, False
        first = turns[0] if turns else {}
        files = [u.get("original") or u.get("name") or "" for u in first.get("uploads") or [] if isinstance(u, dict)]
        title = titles.title_from(str(first.get("text") or ""), files)
        if not title:
            return "", False
        others = [m.title for m in self.list(chat.owner) if m.id != chat.id]
        return titles.distinct(title, others, answers[0] if answers else ""), True

    def search(self, owner: str, query: str) -> builtins.list[ChatMeta]:
        """The owner's chats whose title, messages or answers hold every word of `query`, newest first."""
        return [m for m in self.list(owner) if titles.matches(query, m.title, m.text)]


class _Unchanged(Exception):
    """A meta change that found nothing to do (ChatStore.set_model_title)."""


def _tombstone(owner: str, chat_id: str) -> str:
    return f"deleted:{owner}:{chat_id}"


def settings_dict(settings: Any) -> dict[str, Any] | None:
    """A session's RunSettings as plain JSON data (tuples as lists), as saved and as the settings form reads it."""
    if settings is None:
        return None
    from dataclasses import asdict, is_dataclass

    if is_dataclass(settings) and not isinstance(settings, type):
        data = asdict(settings)
        data.pop("hf_token", None)  # a visitor's token is never saved
        return {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}
    return None
