"""Two tabs on one saved chat: the tab that opened or continued it last holds it (a lease kept in memory).

Why: each tab's session has its own agent and memory, and each saved its version over the other's: turns
were lost. Now the other tab's message is not sent; it is told the chat is open elsewhere and offered to take
it over (ui/panels/history.py reloads the chat from disk). A lease whose tab is gone, or shows another chat,
is free.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ui.session.registry import SessionRegistry
    from ui.session.session import Session

REFUSAL = ("📑 This chat is open in another tab, which continued it last. Your message was not sent (it is still "
           "in the box). Press **Take over here** to load the chat as it is now and continue it in this tab.")
DELETED = ("🗑 This chat was deleted (in another tab). Your message was not sent (it is still in the box). Press "
           "**New chat** to send it in a new chat.")


class ChatLeases:
    def __init__(self, registry: SessionRegistry) -> None:
        self.registry = registry
        self._holders: dict[str, str] = {}  # chat id -> tab key
        self._lock = threading.Lock()

    def hold(self, chat_id: str, key: str) -> None:
        with self._lock:
            self._holders[chat_id] = key

    def holder(self, chat_id: str, key: str) -> Session | None:
        """The live session of another tab that holds this chat, if any."""
        with self._lock:
            holder = self._holders.get(chat_id)
        other = self.registry.peek(holder) if holder and holder != key else None
        chat = other.record.saved if other is not None else None
        if other is None or chat is None or chat.id != chat_id or other.closed_at is not None:
            return None
        return other

    def claim(self, key: str, session: Session) -> str | None:
        """Before a message is sent: None if this tab may continue its chat (it takes the lease), else why not."""
        chat = session.record.saved
        if chat is not None and chat.deleted:
            return DELETED  # saving on would bring the deleted chat back
        if chat is None or not chat.kept:
            return None
        if self.holder(chat.id, key) is not None:
            return REFUSAL
        self.hold(chat.id, key)
        return None
