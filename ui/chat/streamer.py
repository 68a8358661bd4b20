"""A session's run as the updates of the streaming events (a run, a resumed run, a run handed to a reloaded page).

One per server, a service (ui/services.py): the chat's handlers, the approval panel and the saved-chats list
all stream a run the same way, through it. The layout gives it the five output components once they exist
(`outputs`), and then it renders each update itself (ui/chat/stream_outputs.py explains why).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gradio as gr

from ui.chat.stream_outputs import Shown, StreamOutputs, session_outputs
from ui.session.registry import SessionRegistry
from ui.session.session import Session
from ui.web.gradio_compat import root_url_of


class RunStreamer:
    def __init__(self, registry: SessionRegistry) -> None:
        self.registry = registry
        self.outputs: StreamOutputs | None = None  # set by the layout, which wires postprocess=False

    def update(self, session: Session, shown: Shown, input_update: Any = None) -> tuple:
        """One update of a streaming handler: (chat, message box, files, status, clock)."""
        values = session_outputs(session, shown, input_update)
        return self.outputs.render(values, shown) if self.outputs is not None else values

    def stream_run(self, session: Session, shown: Shown) -> Iterator[tuple]:
        """The updates of the session's run until it ends or pauses.

        No update here changes a property (such as the box's `interactive`): each costs Gradio milliseconds on
        its event loop, in front of every other session's updates (ui/web/input_lock.py locks the box instead).
        """
        for _ in session.drain():
            yield self.update(session, shown)

    def reattach(self, request: gr.Request) -> Iterator[tuple]:
        """After a page load (or a chat opened from the list): if this tab was just handed a session whose run
        goes on (from the page before a reload, or a closed tab), stream it from where it is: the chat so far,
        then live, the message box locked until the run ends or pauses. Only once per hand-over: a second drain
        would end the one this page already streams."""
        session = self.registry.peek(getattr(request, "session_hash", None) or "anonymous")
        if session is None or not session.take_hand_over():
            yield (gr.skip(),) * 5
            return
        # The message box is locked while the run streams here, as in the tab that sent the message (whose page
        # locks it on submit: ui/web/input_lock.py), and freed when the run ends or pauses. Left free, this page
        # took a message while the run went on, refused with "A run is still going" (issue 31, item 10).
        shown = Shown(root_url=root_url_of(request))
        # (gr.update, a dict: `StreamOutputs.render` passes it to the page as it is, a component's update it does not)
        yield self.update(session, shown, gr.update(interactive=False))
        yield from self.stream_run(session, shown)
        yield self.update(session, shown, gr.update(interactive=True))
