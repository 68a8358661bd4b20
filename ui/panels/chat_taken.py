"""A tab whose chat another tab took (issue 31): told so within seconds, its message box locked, Take over offered.

Why: two tabs on one saved chat; the tab that opened or continued it last holds it (ui/session/lease.py), and the
other tab's messages are refused. A tab that held the chat learned it was taken only when it sent one: until then
nothing said the chat went on elsewhere, and its box looked as usable as ever. Now the tab looks, lightly:

  * a timer ticks every `TICK_S` seconds; its handler is not queued (a queued event a second for every tab would
    crowd the queue, and only a page's own events are counted by the browser tests) and reads the chat's lease:
  * a tick that finds the chat the tab shows held by no other tab (`ChatLeases.held_elsewhere`: this tab holds
    it, or would take it with its next message) remembers so; one that finds it then held by another tab, with
    no run of this tab's going on or waiting, records the refusal as a refused message does
    (`Session.record_refusal`: the chat says why, `HistoryController.refresh` offers Take over here, a click in
    the side list reloads the chat) and changes a marker. Only a chat taken from this tab is told of: a tab
    opening a chat another tab holds shows it a moment before it takes the lease, and a tab watching another
    tab's run is the watch's (ui/panels/watch.py);
  * the marker's change (queued: only a queued event's toasts reach the page) tells the person, shows the chat
    with the note, locks the message box (its placeholder says why) and shows Take over here, which loads the
    chat as it is now (ui/panels/history.py `take_over`).
"""
from __future__ import annotations

import secrets
import threading
from typing import Any

import gradio as gr

from ui.chat.stream_outputs import Shown, session_outputs
from ui.components import ChatColumn
from ui.saved.owners import tab_key
from ui.services import Services
from ui.session.lease import TAKEN, TAKEN_PLACEHOLDER

#: How often a tab looks whether another tab took its chat: every open tab sends one small request this often,
#: so not every second (a server shared by many visitors' tabs); a person is told within a few seconds.
TICK_S = 2.0
#: Tabs remembered at most (a tab key is the visitor's to make up): the oldest go first.
MAX_REMEMBERED = 10_000


class ChatTaken:
    """The timer's handlers: `tick` (the lease, unqueued) and `notice` (the page, once the chat was taken)."""

    def __init__(self, services: Services) -> None:
        self.registry = services.registry
        self.leases = services.leases
        self._lock = threading.Lock()
        self._held: dict[str, str] = {}  # tab -> the chat a tick found no other tab holding

    def tick(self, request: gr.Request) -> Any:
        """A new marker once the chat this tab could continue is found held by another tab (its refusal
        recorded); else skipped."""
        key = tab_key(request)
        session = self.registry.peek(key)
        if session is None or session.refused is not None or session.unfinished() \
                or self.registry.watchers.get(key) is not None:
            return gr.skip()
        chat = session.record.saved
        if chat is None or not chat.kept or chat.deleted:
            return gr.skip()
        elsewhere = self.leases.held_elsewhere(chat.id, key)
        with self._lock:
            had = self._held.get(key) == chat.id
            if not elsewhere:  # this tab holds it, or may take it with its next message
                self._held.pop(key, None)
                self._held[key] = chat.id
                while len(self._held) > MAX_REMEMBERED:
                    del self._held[next(iter(self._held))]
                return gr.skip()
            if not had:
                return gr.skip()
            del self._held[key]
        session.record_refusal(TAKEN)
        return secrets.token_hex(8)

    def notice(self, request: gr.Request) -> tuple:
        """(chat, message box, files, status, clock, Take over here) of a tab whose chat was taken."""
        session = self.registry.peek(tab_key(request))
        if session is None or session.refused is None:
            return (gr.skip(),) * 6
        gr.Warning(TAKEN)
        box = gr.MultimodalTextbox(interactive=False, placeholder=TAKEN_PLACEHOLDER)
        return (*session_outputs(session, Shown(), box), gr.Button(visible=True))


def wire(services: Services, column: ChatColumn, takeover_btn: Any) -> ChatTaken:
    """The timer (always on: a chat can be taken whenever) and the notice it sets off."""
    taken = ChatTaken(services)
    # In the page but not shown (a gr.State's change did not follow this unqueued tick): its change is the notice.
    marker = gr.Textbox(visible="hidden", elem_id="chat-taken-marker")
    timer = gr.Timer(TICK_S)
    timer.tick(taken.tick, outputs=[marker], queue=False, api_visibility="private", show_progress="hidden")
    marker.change(taken.notice, outputs=[*column.outputs(), takeover_btn], api_visibility="private",
                  concurrency_limit=None, show_progress="hidden")
    return taken
