"""Two tabs on one saved chat: the tab that opened or continued it last holds it (a lease in the shared state).

Why: each tab's session has its own agent and memory, and each saved its version over the other's: turns
were lost. Now the other tab's message is not sent; it is told the chat is open elsewhere and offered to take
it over (ui/panels/history.py reloads the chat from the store). A lease whose tab is gone, or shows another
chat, is free.

Several replicas (issue 28): the lease lives in the shared state (ui/shared/state.py; Redis when
AGENTDECK_REDIS_URL is set) as `<replica>|<tab key>`, so a tab on another replica sees it. This replica checks
its own holders' sessions as before; another replica's holder counts while its lease lives (renewed with each
message, it expires after the session idle time-out), and Take over here always takes it.
"""
from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from ui.shared.state import MemoryState, SharedState

if TYPE_CHECKING:
    from ui.session.registry import SessionRegistry
    from ui.session.session import Session

REFUSAL = ("📑 This chat is open in another tab, which continued it last. Your message was not sent (it is still "
           "in the box). Press **Take over here** to load the chat as it is now and continue it in this tab.")
#: The same, told before a message is sent: a tab finds its chat held by another tab (ui/panels/chat_taken.py).
TAKEN = ("📑 This chat is now open in another tab, which continues it: a message from this tab would not be sent. "
         "Press “📑 Take over here” to load the chat as it is now and continue it in this tab.")
TAKEN_PLACEHOLDER = "This chat continues in another tab: press 📑 Take over here to continue it in this tab."
DELETED = ("🗑 This chat was deleted (in another tab). Your message was not sent (it is still in the box). Press "
           "**New chat** to send it in a new chat.")
ANSWERED = ("🔁 This decision was already made, or its run stopped, in another tab (maybe served by another server). "
            "Reopen the chat to see it.")
#: How long a made decision's id stays taken (a paused run's answer starts its resume once, on one replica).
DECIDED_TTL_S = 7 * 24 * 3600.0
#: This process among the replicas (a lease names the replica whose tab holds it).
REPLICA = secrets.token_hex(8)


class ChatLeases:
    def __init__(self, registry: SessionRegistry, state: SharedState | None = None, ttl_s: float = 3600.0) -> None:
        self.registry = registry
        self.state: SharedState = state if state is not None else MemoryState()
        self.ttl_s = ttl_s

    def hold(self, chat_id: str, key: str) -> None:
        self.state.lease_set(f"lease:{chat_id}", f"{REPLICA}|{key}", self.ttl_s)

    def _held_by(self, chat_id: str) -> tuple[str, str] | None:
        value = self.state.lease_get(f"lease:{chat_id}")
        if not value or "|" not in value:
            return None
        replica, _, key = value.partition("|")
        return replica, key

    def holder(self, chat_id: str, key: str) -> Session | None:
        """The live session of another tab of this replica that holds this chat, if any."""
        held = self._held_by(chat_id)
        if held is None or held[1] == key or held[0] != REPLICA:
            return None
        other = self.registry.peek(held[1])
        chat = other.record.saved if other is not None else None
        if other is None or chat is None or chat.id != chat_id or other.closed_at is not None:
            return None
        return other

    def held_elsewhere(self, chat_id: str, key: str) -> bool:
        """Another tab holds the chat: a live session here, or any tab of another replica while its lease lives."""
        held = self._held_by(chat_id)
        if held is None or held[1] == key:
            return False
        return held[0] != REPLICA or self.holder(chat_id, key) is not None

    def held_on_another_replica(self, chat_id: str) -> bool:
        """A tab of another replica holds the chat (what this replica knows of it may be behind the store)."""
        held = self._held_by(chat_id)
        return held is not None and held[0] != REPLICA

    def claim(self, key: str, session: Session) -> str | None:
        """Before a message is sent: None if this tab may continue its chat (it takes the lease), else why not."""
        chat = session.record.saved
        if chat is not None and chat.deleted:
            return DELETED  # saving on would bring the deleted chat back
        if chat is None or not chat.kept:
            return None
        if self.held_elsewhere(chat.id, key):
            return REFUSAL
        self.hold(chat.id, key)
        return None

    def claim_message(self, key: str, session: Session, text: str) -> str | None:
        """`claim` for a message. When the session's paused run waits for an answer to the agent's question, the
        message is that answer (`RunControl.answer_question`): its request is taken once among all replicas, as a
        panel's answer is (`claim_decision`), so a stopped or already answered question is not resumed again
        from another tab's copy of the memory."""
        pending = session.pending_request() if text.strip() else None
        if pending is not None and pending.request_kind == "question" and not session.running:
            return self.claim_decision(key, session, pending.request_id)
        return self.claim(key, session)

    def claim_decision(self, key: str, session: Session, request_id: str) -> str | None:
        """Before a paused run's decision is answered: None if this tab may answer it, else why not. The tab
        takes the chat's lease as a message would, and the request's id once among all replicas (an atomic slot
        of one in the shared state): a paused run holds no thread, so its memory is on every replica that
        opened the chat, and two quick answers on two replicas would each resume it. `release_decision` if the
        answer is refused after all."""
        why = self.claim(key, session)
        if why is not None:
            return why
        return None if self.state.slot_take(f"decided:{request_id}", 1, DECIDED_TTL_S) else ANSWERED

    def stop(self, session: Session) -> bool:
        """Stop the session's run (`Session.interrupt`; False if none goes on or waits). A run paused at a
        decision: its request is first taken as decided among all replicas, as an answer takes it, so no
        other tab resumes it from the copy of the memory it loaded while the run waited (it did, on another
        replica: the stopped code ran there)."""
        pending = session.pending_request()
        if pending is not None and not session.running:
            self.state.slot_take(f"decided:{pending.request_id}", 1, DECIDED_TTL_S)
        return session.interrupt()

    def release_decision(self, request_id: str) -> None:
        """The answer was refused (it did not fit the request): the request may be answered again."""
        self.state.slot_release(f"decided:{request_id}")
