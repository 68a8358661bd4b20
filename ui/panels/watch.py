"""A second tab on a chat whose run goes on in another open tab (issue 31): it shows the run live and read-only.

The page load or a click in the side list (ui/panels/history.py) starts the watch (`Watchers`,
ui/session/watchers.py) and shows the chat as it is; this streaming event, chained after them, follows it:
  * while the run goes on (or waits for a decision), the chat, files and status as the other tab sees them,
    the message box locked (Stop and the decision panel act on the watched run: ui/services.py `acting_session`);
  * if the other tab's page goes away meanwhile (closed, or the browser quit), this tab takes the run and streams
    the rest itself: a tab opened seconds after the page closed, before the server knew, no longer shows an empty
    chat while the run finishes unseen;
  * once the run ends and the other tab has saved its end (`RunHandle.end_saved`), the chat as saved, shown in
    this tab's own session; a message from here is then treated as any second tab's
    (ui/session/lease.py: not sent while the other tab holds the chat, Take over here offered).
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import gradio as gr

from agents import events as ev
from ui.chat.stream_outputs import Shown, session_outputs
from ui.panels.answered_elsewhere import AnsweredElsewhere
from ui.panels.approval_panel import TASK_PLACEHOLDER, VIEW_KEYS, as_tuple, view, view_hidden
from ui.saved.owners import tab_key
from ui.saved.store import ChatStoreError
from ui.services import Services
from ui.session.session import Session
from ui.session.watchers import Watch

WATCH_PLACEHOLDER = "This chat is running in another tab: shown here live, read-only (⏹ Stop works here)."
WATCH_NOTE = ("This chat is running in another tab: it is shown here live and read-only, and ⏹ Stop stops it. "
              "Once the run ends you can continue the chat here.")
#: The same, for a run that waits for a decision: its panel's buttons act here too (a newcomer was told "read-only"
#: over working Approve and Reject buttons).
WATCH_PAUSED_NOTE = ("This chat is open in another tab, where its run waits for your decision: decide here or there "
                     "(the panel below the chat), or ⏹ Stop it. Once the run ends you can continue the chat here.")
#: How often the watched chat is looked at, and how long an unchanged one goes without an update (its clock).
POLL_S = 0.4
QUIET_S = 2.0
#: How long the watch waits for the other tab to save the run's end before it reads the chat from disk anyway.
END_SAVE_WAIT_S = 10.0
#: The decision panel's components the watch updates: the panel's view but the message box (the chat's own).
PANEL_KEYS = VIEW_KEYS[:-1]
PANEL_KEPT = (gr.skip(),) * len(PANEL_KEYS)


def panel_view(session: Session) -> tuple:
    """The panel showing what `session` waits for now (the message box left to the chat's updates)."""
    return as_tuple(view(session.pending_shown()))[:len(PANEL_KEYS)]


def panel_again(pending: ev.DecisionRequested | None, sent: str | None) -> tuple:
    """The panel's updates in a watch's update, where `pending` is the decision the run waits for now (None: none)
    and `sent` the id of the one the stream showed last. Each update says where the run is (its status line), so each
    carries the panel to match: the decision in full when it is new, else only the panel shown (its request id
    and visibility: the person's edits are left alone) or hidden. Why: an update another event computed earlier
    can land after the stream's (Gradio events finish in any order): the page load's refresh, made while the
    step ran, hid the panel the stream had just shown, and the tab said "waiting for your decision" over no
    panel for good; a panel shown again just before a click here decided it stayed up over the resumed run."""
    if pending is not None:
        return as_tuple(view(pending, shown_id=sent))[:len(PANEL_KEYS)]
    if sent is not None:
        return as_tuple(view_hidden())[:len(PANEL_KEYS)]
    return PANEL_KEPT


def locked_box() -> Any:
    return gr.MultimodalTextbox(interactive=False, placeholder=WATCH_PLACEHOLDER)


def free_box() -> Any:
    return gr.MultimodalTextbox(interactive=True, placeholder=TASK_PLACEHOLDER)


class RunWatch:
    """The watch's streaming handler, built from the services."""

    def __init__(self, services: Services, elsewhere: AnsweredElsewhere | None = None) -> None:
        """`elsewhere`: the approval panel's (ui/panels/approvals.py), which knows which tab made a decision and
        which tabs were told; a watch built alone (tests) makes its own."""
        self.services = services
        self.registry = services.registry
        self.watchers = services.registry.watchers
        self.elsewhere = elsewhere if elsewhere is not None else AnsweredElsewhere(services)

    def start(self, key: str, running: Session, owner: str, chat_id: str) -> None:
        """Tab `key` shows `running`'s run (the same owner's chat) from now on; `follow` streams it."""
        self.watchers.watch(key, Watch(running, chat_id, owner))
        gr.Info(WATCH_NOTE if running.running or not running.has_pending() else WATCH_PAUSED_NOTE)

    def follow(self, shown_id: Any, request: gr.Request) -> Iterator[tuple]:
        """(chat, message box, files, status, clock, then the decision panel) of the watched run until it ends or
        this tab takes it. A decision the run comes to meanwhile is shown in the panel: the page load's refresh
        showed only what waited then, and this event, which goes on while the run waits, is the tab's one look
        at the run (without it the chat said "approve or reject (in the panel below the chat)" over no panel).
        `shown_id`: the decision the page's panel shows as this starts. What waits then was taken as shown, but
        on a loaded server this event can start after the run paused and after the load's refresh had looked:
        that decision then never reached the tab (a watching tab's full-run failure, 20 s with no panel). Each
        update carries the panel to match its status line (`panel_again`): one another event computed earlier can
        land after it. A decision this event saw waiting, and that waits no more while the run goes on, was made
        in another tab: the person is told (`AnsweredElsewhere.tell`). The panel's own check, every 2 s, came too
        late when the run paused again at once: this event had shown the next decision, which the check found
        waiting."""
        key = tab_key(request)
        watch = self.watchers.get(key)
        if watch is None:
            yield (gr.skip(),) * (5 + len(PANEL_KEYS))
            return
        shown, last, last_at = Shown(), None, 0.0
        panel_id = shown_id if isinstance(shown_id, str) and shown_id else None  # what the page's panel shows
        seen: str | None = None  # the decision this event saw waiting on its last look
        while self.watchers.get(key) is watch:  # another chat opened in this tab, or New chat: it stops
            session = watch.session
            if session.key == key:  # handed back to this tab (a reload's token): its own stream shows the run
                self.watchers.forget(key, watch)
                yield (*session_outputs(session, Shown(), free_box()), *PANEL_KEPT)
                return
            if session.detached_at is not None:  # its page went away: this tab takes the run
                moved = self.registry.rekey(session.key, key, when=lambda s: s.detached_at is not None)
                if moved is not None:
                    self.watchers.forget(key, watch)
                    yield from self._take(key, moved, watch)
                    return
            if not watch.live:  # forgotten once this tab's session shows the end (`App.after_stop` waits for it)
                ended = self._ended(key, watch)
                self.watchers.forget(key, watch)
                yield ended
                return
            values = session_outputs(session, shown, locked_box() if last is None else gr.skip())
            signature = (repr(values[0]), values[2], values[3])
            pending = session.pending_request()
            waits = pending.request_id if pending is not None else None
            if seen is not None and waits != seen and session.was_answered(seen):  # not a Stop: the run goes on
                self.elsewhere.tell(seen, request)
            seen = waits
            if signature != last or waits != panel_id or time.monotonic() - last_at >= QUIET_S:
                last, last_at = signature, time.monotonic()
                if waits is not None and waits != panel_id:  # shown first now: the time to decide counts from it
                    pending = session.pending_shown()
                    waits = pending.request_id if pending is not None else None
                yield (*values, *panel_again(pending, panel_id))
                panel_id = waits
            time.sleep(POLL_S)

    def _take(self, key: str, session: Session, watch: Watch) -> Iterator[tuple]:
        """Stream the rest of a run this tab took over from a page that went away."""
        self.services.leases.hold(watch.chat_id, key)
        self.services.store.set_current(watch.owner, watch.chat_id)
        shown = Shown()
        yield (*session_outputs(session, shown, locked_box()), *PANEL_KEPT)
        if session.take_hand_over():
            for _ in session.drain():
                yield (*session_outputs(session, shown), *PANEL_KEPT)
        yield (*session_outputs(session, shown, free_box()), *panel_view(session))

    def _ended(self, key: str, watch: Watch) -> tuple:
        """The watched run ended: the chat as saved, once its end is on disk. The run counts as ended before
        that (the drain shows the end first, then saves it); read before, the chat from disk lacked its end (a
        stop showed no "Stopped" here on a loaded machine)."""
        watch.session.wait_end_saved(END_SAVE_WAIT_S)
        return (*self._saved(key, watch), *PANEL_KEPT)

    def _saved(self, key: str, watch: Watch) -> tuple:
        """The watched run ended: the chat as saved, in this tab's own session."""
        own = self.registry.peek(key)
        chat = self.services.store.get(watch.owner, watch.chat_id)
        if own is None or chat is None or own.record.saved is None or own.record.saved.id != chat.id:
            return session_outputs(watch.session, Shown(), free_box())
        try:
            memory, metadata = self.services.store.load_memory(chat)
        except ChatStoreError:
            return session_outputs(watch.session, Shown(), free_box())
        own.show_saved(memory, metadata.get("turns") or [])
        return session_outputs(own, Shown(), free_box())
