"""Retry and Edit in the web UI: the two buttons next to Stop, the edit box under the chat, their handlers.

🔁 Retry sends the last message again from the state before it; ✏️ Edit opens a box with the last message's
text, and its Send runs the edited text in its place. Either rewinds the session first (ui/session/rewind.py):
memory, chat and variables as before the last message, saved at once; that message's uploads go with it again.
Both are refused, saying why, while a run is going or waits for a decision (a warning on the page: a note in the
chat would land inside the running step), before the first message and while another tab holds the chat (a note in
the chat; ui/session/lease.py: it offers Take over here instead).

Stable element ids: retry-btn, edit-last-btn, edit-panel, edit-text, edit-send-btn, edit-cancel-btn.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import gradio as gr

from ui.chat.stream_outputs import Shown
from ui.components import Page
from ui.services import Services
from ui.session.lease import DELETED
from ui.session.rewind import RewindRefused
from ui.session.session import Session
from ui.settings import RunSettings, SignInNeededError
from ui.settings_form import FormValues
from ui.web.gradio_compat import OptionalEventData, root_url_of
from ui.web.gradio_dom import LOCK_IF_FREE_JS, UNLOCK_OWN_JS
from ui.web.input_lock import lock_on, unlock_after

RETRY, EDIT = "retry", "edit your last message"
REWINDING = "↩️ Rewinding to before your last message: rebuilding the sandbox's variables…"
NOT_RETRIED = "↩️ **Nothing was retried**: "
NOT_SENT = "✏️ **Your edited message was not sent** (it is still in the edit box): "
HELD_ELSEWHERE = ("this chat is open in another tab, which continued it last. Press **Take over here** to load the "
                  "chat as it is now and continue it in this tab.")
DELETED_ELSEWHERE = "this chat was deleted (in another tab). Press **New chat** to start a new one."
EMPTY_EDIT = "the message is empty. Type your message, or press Cancel."

#: Once the edit box is shown: lock the message box as a resend does (its Send unlocks it, as Cancel does) and bring
#: the edit box into view. Nothing when Edit was refused (the box is not on the page).
EDITOR_OPENED_JS = f"""() => new Promise(done => {{
  const until = Date.now() + 2000;
  const look = () => {{
    const panel = document.querySelector('#edit-panel');
    if (panel && panel.offsetParent) {{
      ({LOCK_IF_FREE_JS})();
      panel.scrollIntoView({{block: 'nearest'}});
      panel.querySelector('textarea')?.focus();
      return done([]);
    }}
    if (Date.now() > until) return done([]);
    requestAnimationFrame(look);
  }};
  look();
}})"""

CSS = """
#edit-panel { border: 2px solid var(--color-accent); border-radius: 10px; padding: 10px 12px; }
#edit-panel .ad-edit-title p { margin: 0 0 4px 0; }
"""


@dataclass
class RetryControls:
    """The components (built inside the layout's Blocks: the edit box first, then the buttons in their row)."""
    panel: Any
    text: Any
    send_btn: Any
    cancel_btn: Any
    retry_btn: Any = None
    edit_btn: Any = None


def build_buttons() -> tuple[Any, Any]:
    """🔁 Retry and ✏️ Edit (call inside the row of Stop and New chat)."""
    retry_btn = gr.Button("🔁 Retry", elem_id="retry-btn", variant="secondary", size="sm")
    edit_btn = gr.Button("✏️ Edit last message", elem_id="edit-last-btn", variant="secondary", size="sm")
    return retry_btn, edit_btn


def build_editor() -> RetryControls:
    """The edit box under the chat, hidden until ✏️ Edit is pressed."""
    with gr.Column(visible=False, elem_id="edit-panel") as panel:
        gr.Markdown("✏️ **Edit your last message.** Sending it replaces that message and its answer: the agent "
                    "starts again from before it (its files stay attached).", elem_classes="ad-edit-title")
        text = gr.Textbox(show_label=False, lines=2, max_lines=12, elem_id="edit-text", interactive=True)
        with gr.Row():
            send_btn = gr.Button("Send edited message", elem_id="edit-send-btn", variant="primary", size="sm")
            cancel_btn = gr.Button("Cancel", elem_id="edit-cancel-btn", variant="secondary", size="sm")
    return RetryControls(panel, text, send_btn, cancel_btn)


#: The chat column's outputs left as they are (ui/components.py ChatColumn.outputs: five components).
NO_CHANGE = (gr.skip(),) * 5


def refuse(session: Session, note: str) -> bool:
    """Tell the person why Retry or Edit did nothing. While a run goes on (or waits for a decision) it is a
    warning on the page, True: a note added to the chat then would land inside the running step, splitting it
    for good. Otherwise a note in the chat, False."""
    if session.running:
        gr.Warning(note.replace("**", ""))
        return True
    session.record.add_note(note)
    return False


class RetryHandlers:
    """Handlers of the buttons and the edit box, built from the services (ui/services.py): the sessions, the
    checks before a run (its gate) and the run's streamer."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self._unsent: set[str] = set()  # tabs whose edited message was refused (their edit box opens again)
        self._lock = threading.Lock()

    # the edit box ----------------------------------------------------------------------------------------
    def open_editor(self, request: gr.Request) -> tuple:
        """Show the edit box with the last message's text, or say why there is nothing to edit now."""
        session = self.services.session_for(request)
        why = session.rewind_refusal(EDIT)
        message = session.last_message() if why is None else None
        if message is None:
            gr.Warning(why or "There is no message to edit yet: send one first.")
            return gr.skip(), gr.skip()
        return gr.Column(visible=True), message.text

    @staticmethod
    def close_editor() -> Any:
        return gr.Column(visible=False)

    def reopen_if_unsent(self, request: gr.Request) -> Any:
        """After Send: the edit box comes back (with the person's text) if the edited message was not sent."""
        key = getattr(request, "session_hash", None) or "anonymous"
        with self._lock:
            unsent = key in self._unsent
            self._unsent.discard(key)
        return gr.Column(visible=True) if unsent else gr.skip()

    # the streaming handlers ------------------------------------------------------------------------------
    def retry(self, approval_mode: str | None, request: gr.Request, oauth_token: gr.OAuthToken | None = None,
              event: OptionalEventData = None, **form: Any) -> Iterator[tuple]:
        """🔁 Retry: the last message again, from the state before it. `form`: the settings form's values."""
        yield from self._resend(None, FormValues(**form), approval_mode, request, oauth_token, event)

    def edit_resend(self, text: str, approval_mode: str | None, request: gr.Request,
                    oauth_token: gr.OAuthToken | None = None, event: OptionalEventData = None,
                    **form: Any) -> Iterator[tuple]:
        """Send edited: the edited text in place of the last message, from the state before it."""
        yield from self._resend(str(text or ""), FormValues(**form), approval_mode, request, oauth_token, event)

    def _resend(self, text: str | None, form: FormValues, approval_mode: str | None, request: gr.Request,
                token: gr.OAuthToken | None, event: Any) -> Iterator[tuple]:
        services, gate = self.services, self.services.gate
        if text is not None:
            gate.check_message(text)  # the edit box keeps the text
        session = services.session_for(request)
        key = getattr(request, "session_hash", None) or "anonymous"
        action, refused_note = (RETRY, NOT_RETRIED) if text is None else (EDIT, NOT_SENT)
        shown = Shown(root_url=root_url_of(request))
        try:
            settings = gate.settings(form, token=token)
        except SignInNeededError:
            self._note_unsent(key, text)
            yield from gate.ask_to_sign_in(session, request, from_page=getattr(event, "target", None) is not None)
            return
        why = session.rewind_refusal(action)
        if why is None and text is not None and not text.strip():
            message = session.last_message()
            why = EMPTY_EDIT if message is None or not message.uploads else None
        if why is None:  # another tab holds the chat: the Take over button shows (a refusal recorded)
            held = services.leases.claim(key, session)
            why = None if held is None else DELETED_ELSEWHERE if held == DELETED else HELD_ELSEWHERE
            session.record_refusal(None if why is None else refused_note + why)
        elif refuse(session, refused_note + why):
            self._note_unsent(key, text)
            yield NO_CHANGE  # the run's own event keeps streaming the chat
            return
        if why is not None:
            self._note_unsent(key, text)
            yield services.streamer.update(session, shown)
            return
        try:
            gate.admit(request, session)  # a sandbox for the rebuilt variables, within the visitor's limits
        except gr.Error:
            self._note_unsent(key, text)
            raise
        session.set_approval_mode(approval_mode)
        yield from gate.limited(self._rewind_and_run(session, key, text, settings, shown, refused_note), request,
                                session)

    def _rewind_and_run(self, session: Session, key: str, text: str | None, settings: RunSettings, shown: Shown,
                        refused_note: str) -> Iterator[tuple]:
        streamer = self.services.streamer
        with session.lock:
            before = session.record.transcript
            pending = before.add_note(REWINDING)
        yield streamer.update(session, shown)  # re-running the earlier code may take a while
        try:
            message = session.rewind_last_turn(settings, RETRY if text is None else EDIT)
        except RewindRefused as exc:
            self._note_unsent(key, text)
            with session.lock:
                if pending in before.roots:
                    before.roots.remove(pending)
            if refuse(session, refused_note + str(exc)):
                yield NO_CHANGE
                return
            yield streamer.update(session, shown)
            return
        yield streamer.update(session, shown)  # the chat as it was before the last message
        started = session.start_run(message.text if text is None else text, [], settings, kept=message.uploads)
        yield streamer.update(session, shown)
        if started:
            yield from streamer.stream_run(session, shown)

    def _note_unsent(self, key: str, text: str | None) -> None:
        if text is not None:
            with self._lock:
                self._unsent.add(key)


def wire(services: Services, controls: RetryControls, page: Page, approval_mode: Any,
         close_on: list[Any]) -> list[Any]:
    """Connect the buttons and the edit box; returns the streaming events (for the chains that follow runs).
    `close_on`: triggers that show another chat (New chat, a chat opened from the list): the edit box closes,
    so it never sends one chat's text in place of another chat's last message."""
    handlers = RetryHandlers(services)
    settings = page.form.by_name()
    run_options = dict(outputs=page.column.outputs(), concurrency_limit=services.config.max_runs,
                       concurrency_id="runs", show_progress="hidden",
                       postprocess=False)  # the streamer renders (ui/chat/streamer.py)
    quick = dict(concurrency_limit=None, show_progress="hidden", api_visibility="private")
    for trigger in close_on:
        trigger(handlers.close_editor, outputs=[controls.panel], **quick)
    # The message box is locked while the resent message runs; pressed during a run (refused), the box stays
    # locked for that run.
    lock_on(controls.retry_btn.click, if_free=True)
    retried = controls.retry_btn.click(handlers.retry, inputs_kwargs={**settings, "approval_mode": approval_mode},
                                       api_name="retry", **run_options)
    unlock_after(retried, if_free=True)
    # While the edit box is open it is the one box to type in: the message box is locked (text typed there went
    # out as a new message) and the edit box is scrolled into view (it opened below the fold).
    opened = controls.edit_btn.click(handlers.open_editor, outputs=[controls.panel, controls.text], **quick)
    opened.then(None, js=EDITOR_OPENED_JS, queue=False, api_visibility="private")
    cancelled = controls.cancel_btn.click(handlers.close_editor, outputs=[controls.panel], **quick)
    for closed in (cancelled, *(trigger(None, js=UNLOCK_OWN_JS, queue=False, api_visibility="private")
                                for trigger in close_on)):
        closed.then(None, js=UNLOCK_OWN_JS, queue=False, api_visibility="private")
    lock_on(controls.send_btn.click, if_free=True)
    hidden = controls.send_btn.click(handlers.close_editor, outputs=[controls.panel], **quick)
    edited = hidden.then(handlers.edit_resend, inputs=[controls.text],
                         inputs_kwargs={**settings, "approval_mode": approval_mode},
                         api_name="edit_last_message", **run_options)
    unlock_after(edited, if_free=True)
    edited.then(handlers.reopen_if_unsent, outputs=[controls.panel], **quick)
    return [retried, edited]
