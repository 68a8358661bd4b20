"""A saved chat opened again in a session: its agent rebuilt (or attached to the chat's sandbox), shown as it is
on disk until the next message, or shown as another replica saved it after a decision made there.

A part of `Session` (ui/session/session.py) kept apart by concept; it changes the session's parts under the
session's lock, as the rest of the session does.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ui.saved.restore import carry_memory_into, keep_memory_in
from ui.session.agent_slot import AgentSlot
from ui.session.chat_record import ChatRecord
from ui.session.run_control import RunControl
from ui.session.sandbox_keep import KEPT_NOTE, SandboxKeeper, rebuilt_headline
from ui.settings import RunSettings

WATCHED_NOTE = "♻️ **Continued in this tab.** The chat's variables were rebuilt from its recorded code steps."
BUSY_NOTE = "♻️ **Chat reopened.** The server is busy now, so its variables will be rebuilt with your next message."


class ReopenedChat:
    lock: threading.RLock
    _record: ChatRecord
    _slot: AgentSlot
    _keeper: SandboxKeeper
    _runs: RunControl

    if TYPE_CHECKING:  # the session's, declared for the type checker only
        def use_agent(self, agent: Any, settings: RunSettings | None) -> None: ...

    def restore_agent(self, memory: Any, settings: RunSettings) -> None:
        """A reopened chat's agent (after `record.reopen`): built now, given the memory, its sandbox's variables
        rebuilt."""
        with self.lock:
            self._record.end_restoring()
            try:
                agent = self._slot.build(settings, self._record.workspace)
            except Exception as exc:
                self._record.add_error("Could not start the agent", exc, "restoring an agent",
                                       ". The conversation is shown, but the next message starts with an empty memory.")
                return
            kept, why = self._keeper.attach(agent)  # the chat's sandbox, if it still runs: nothing re-run
            if kept:
                keep_memory_in(agent, memory, self._record.transcript, KEPT_NOTE)
            else:
                carry_memory_into(agent, memory, self._record.transcript,
                                  "♻️ **Chat restored.**" if why is None else rebuilt_headline(why))
            self.use_agent(agent, settings)

    def show_saved(self, memory: Any, turns: list[dict[str, Any]]) -> None:
        """A saved chat shown as it is on disk, its agent built with the next message (a tab that watched the
        chat's run in another tab: ui/panels/watch.py). No sandbox is used until then."""
        with self.lock:
            self._record.reopen(memory, turns)
            self._record.end_restoring()
            if memory is not None and memory.steps:
                self._slot.keep_for_next(memory, WATCHED_NOTE)

    def show_answered_elsewhere(self, request_id: str, memory: Any, turns: list[dict[str, Any]]) -> bool:
        """The decision `request_id` this session's paused run waits for was made in a tab of another replica:
        the chat as saved there is shown, its memory kept for the next agent, and the request here dropped
        (ui/panels/answered_elsewhere.py). False, nothing changed, if this session no longer waits for it."""
        with self.lock:
            if not self._runs.answered_elsewhere(request_id):
                return False
            self.show_saved(memory, turns)
            return True

    def restore_later(self, memory: Any) -> None:
        """A reopened chat whose agent cannot be built now (no sandbox free): the next message builds it."""
        with self.lock:
            self._record.end_restoring()
            self._slot.keep_for_next(memory)
            self._record.add_note(BUSY_NOTE)
