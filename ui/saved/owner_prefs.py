"""What an owner chose last, kept beside their chats: the chat they had open and their approval mode.

Kept apart from the chat store (store.py) because these are small per-owner texts, not chats: the store mixes
them in (`OwnerPreferences`), and they live in its blob store under `owners/<owner>/`.
"""
from __future__ import annotations

from pathlib import Path

from agents.decisions import APPROVAL_MODES
from ui.saved.chat_meta import valid_chat_id
from ui.saved.data_folder import ChatStoreError
from ui.shared.blobs import BlobStore, BlobTooLarge

#: The most read of an owner's small texts from the shared store (every read is bounded before it is read, as
#: meta.json's: meta_blobs.META_MAX_BYTES): `current` a chat id, `approval_mode` a mode's name.
OWNER_TEXT_MAX_BYTES = 256


class OwnerPreferences:
    """The owner's `current` chat and `approval_mode`, as short ASCII blobs; a value this store did not write
    reads as none chosen."""

    blobs: BlobStore

    def _owner_dir(self, owner: str) -> Path:  # the store's: checks the owner key and makes its folder
        raise NotImplementedError

    def _owner_text(self, owner: str, name: str) -> str | None:
        self._owner_dir(owner)
        try:
            blob = self.blobs.get(f"owners/{owner}/{name}", max_bytes=OWNER_TEXT_MAX_BYTES)
            return None if blob is None else blob.data.decode("ascii").strip()
        except (UnicodeDecodeError, BlobTooLarge):
            return None  # not a value this store wrote: as if none was chosen

    def current(self, owner: str) -> str | None:
        text = self._owner_text(owner, "current")
        return text if text is not None and valid_chat_id(text) else None

    def set_current(self, owner: str, chat_id: str | None) -> None:
        self._owner_dir(owner)
        text = (chat_id or "") if valid_chat_id(chat_id) or chat_id is None else ""
        self.blobs.put(f"owners/{owner}/current", text.encode("ascii"))

    def approval_mode(self, owner: str) -> str | None:
        """The approval mode this owner chose last, or None. Why kept here: a reload or a reopened chat must
        not quietly fall back to a mode that pauses less than the one the person chose."""
        text = self._owner_text(owner, "approval_mode")
        return text if text in APPROVAL_MODES else None

    def set_approval_mode(self, owner: str, mode: str) -> None:
        if mode not in APPROVAL_MODES:
            raise ChatStoreError(f"Unknown approval mode {mode!r}; choose one of {', '.join(APPROVAL_MODES)}.")
        self._owner_dir(owner)
        self.blobs.put(f"owners/{owner}/approval_mode", mode.encode("ascii"))
