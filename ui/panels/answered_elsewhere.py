"""A decision this tab shows, answered somewhere else: the tab learns of it and shows the run going on.

Why: a run paused at a decision holds no thread and has no stream (agents/decisions/pending.py). A second tab
that watches the chat (ui/panels/watch.py) can answer it, and the run then streams in that tab only: this one kept
showing the old waiting step, and its Approve said the decision was already made. Live runs reach every tab
through their stream; a paused one reaches none, so a tab that shows a decision looks again, lightly:

  * a timer ticks every `POLL_S` seconds only while the panel shows a decision (`request_id` set), and asks
    whether that request still waits in the session the panel acts on (ui/services.py `acting_session`);
  * if it was answered (in a tab watching this one's chat, or by the API on this session) the panel is hidden, the
    person told, and the tab follows the resumed run read-only until it ends or pauses again, then shows the next
    decision (the tab that answered drains it; `follow` only reads the session's chat);
  * a watching tab's stream (ui/panels/watch.py) can show the next decision before this tab's tick: a run that
    pauses again at once replaced the panel's decision, and the tick then found the new one waiting and said
    nothing. The stream tells the person then (`tell`: once per tab and decision, whichever comes first);
  * if the chat's lease moved to a tab of another replica and the chat as saved there no longer waits for this
    request, the decision was made there: the tab shows the chat as saved and drops its stale copy of the
    request (its Approve can no longer act: the lease and the request's one-time slot refuse it,
    ui/session/lease.py), so the tab and the store agree (`Session.show_answered_elsewhere`); it reads the saved
    chat on until that run has ended or paused again (`_follow_saved`), then shows what waits.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import gradio as gr

from agents.memory import TaskStep
from ui.chat.stream_outputs import Shown
from ui.panels.approval_panel import VIEW_KEYS, as_tuple, view, view_hidden
from ui.saved.owners import tab_key
from ui.saved.store import ChatStoreError
from ui.services import Services
from ui.session.session import Session
from ui.web.gradio_compat import root_url_of

#: How often a tab showing a decision checks that it still waits, and how often a followed run is read.
POLL_S = 2.0
FOLLOW_S = 0.4
#: How often at most a tab reads the saved chat to see whether a tab of another replica answered its decision.
STORE_CHECK_S = 10.0
#: How long at most a tab follows, in the shared store, a run that goes on on another replica.
AWAY_FOLLOW_S = 1800.0
#: Tabs and requests remembered at most (a tab key is the visitor's to make up): the oldest go first.
MAX_REMEMBERED = 10_000
#: How long the follow waits for the drain to save a run's end before it shows the chat anyway.
END_SAVE_WAIT_S = 10.0
ANSWERED_HERE = ("🔁 This decision was made in another tab: the run goes on, shown here. Nothing you do here "
                 "answers it again.")
ANSWERED_AWAY = ("🔁 This decision was made in another tab (maybe served by another server), where the run goes on. "
                 "The chat below is as saved there; to continue it in this tab, open it again from the side list.")


class AnsweredElsewhere:
    """The timer's handlers: `check` (the panel), `follow` (the chat), `after` (the panel once the run stops)."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self._lock = threading.Lock()
        self._follow: set[str] = set()  # tabs whose next `follow` streams the run answered elsewhere
        self._refresh: set[str] = set()  # tabs whose next `after` shows the panel again
        self._following: set[str] = set()  # tabs whose `follow` streams now
        self._read_at: dict[str, float] = {}  # tab -> when it last read its saved chat (`_saved_elsewhere`)
        self._mine: dict[str, str] = {}  # request id -> the tab of this replica that answered it (`answering`)
        self._away: set[str] = set()  # tabs showing a chat whose run goes on on another replica (`_follow_saved`)
        self._told: dict[str, str] = {}  # tab -> the last decision it was told was made elsewhere (`tell`)

    def _flag(self, key: str, refresh: bool) -> None:
        with self._lock:
            self._follow.add(key)
            if refresh:
                self._refresh.add(key)

    def _take(self, flags: set[str], key: str) -> bool:
        with self._lock:
            if key not in flags:
                return False
            flags.discard(key)
            return True

    def answering(self, request_id: str, request: Any) -> None:
        """This tab answers `request_id` now: its own click's chain shows the run, so neither a tick that comes
        meanwhile nor a second click takes the answer for another tab's."""
        with self._lock:
            self._mine[request_id] = tab_key(request)
            while len(self._mine) > MAX_REMEMBERED:
                del self._mine[next(iter(self._mine))]

    def answered_here(self, request_id: Any, request: Any) -> bool:
        with self._lock:
            return isinstance(request_id, str) and self._mine.get(request_id) == tab_key(request)

    def tell(self, request_id: Any, request: Any) -> None:
        """Tell the person that the decision `request_id`, which this tab showed, was made in another tab: once per
        tab and decision, whichever sees it first (this tab's tick, or the stream of a watching tab that shows
        the next decision at once), and never in the tab that made it."""
        key = tab_key(request)
        with self._lock:
            if not isinstance(request_id, str) or self._mine.get(request_id) == key \
                    or self._told.get(key) == request_id:
                return
            self._told.pop(key, None)
            self._told[key] = request_id
            while len(self._told) > MAX_REMEMBERED:
                del self._told[next(iter(self._told))]
        gr.Info(ANSWERED_HERE)

    def still_waits(self, session: Session, shown_id: Any) -> bool:
        """`shown_id` is still the request `session` waits for (nothing to do)."""
        pending = session.pending_request()
        return pending is not None and pending.request_id == shown_id

    def noticed(self, request: Any) -> None:
        """A click on a decision this tab showed that no longer waits (made in another tab): the chain after the
        click (ui/panels/approvals.py `resume`, then the panel's refresh) follows the run."""
        key = tab_key(request)
        if self.services.registry.watchers.get(key) is None:  # a watching tab streams the run already
            self._flag(key, refresh=False)

    # the timer ----------------------------------------------------------------------------------------------
    def check(self, shown_id: Any, request: gr.Request) -> tuple:
        """A tick: the panel's updates, all skipped while the shown decision still waits; else the panel hidden
        (`follow` shows the run, then `after` what waits next)."""
        if not isinstance(shown_id, str) or not shown_id or self.answered_here(shown_id, request):
            return (gr.skip(),) * len(VIEW_KEYS)
        session = self.services.acting_session(request)
        if self.still_waits(session, shown_id):
            if not self._saved_elsewhere(session, request, shown_id):
                return (gr.skip(),) * len(VIEW_KEYS)
            gr.Info(ANSWERED_AWAY)
        elif session.was_answered(shown_id):  # not a Stop: that drops the decision, and the run ends
            self.tell(shown_id, request)
        key = tab_key(request)
        if self.services.registry.watchers.get(key) is None:  # a watching tab streams the run already
            self._flag(key, refresh=True)
        return as_tuple({**view_hidden(), "task_input": gr.skip()})

    def refused(self, session: Session, request: Any, shown_id: Any) -> bool:
        """A click on `shown_id` was refused (ui/session/lease.py: the chat or the request taken in another tab):
        if it was answered on another replica, this tab shows the chat as saved there (the chain after the click
        follows it) and True; else False, nothing changed."""
        if not isinstance(shown_id, str) or not self._saved_elsewhere(session, request, shown_id, at_once=True):
            return False
        self._flag(tab_key(request), refresh=False)
        return True

    def _saved_elsewhere(self, session: Session, request: Any, shown_id: str, at_once: bool = False) -> bool:
        """A tab of another replica holds the chat now and the chat as saved no longer waits for `shown_id`: the
        decision was made there. This tab then shows the chat as saved (its stale request dropped). The saved chat
        is read at most every `STORE_CHECK_S` per tab, unless `at_once` (a click)."""
        chat = session.record.saved
        leases = self.services.leases
        key = tab_key(request)
        # (a tab of this replica answers on the session itself: `still_waits` sees it, the store need not be read)
        if chat is None or not chat.kept or not leases.held_on_another_replica(chat.id):
            return False
        now = time.monotonic()
        with self._lock:
            if not at_once and now - self._read_at.get(key, float("-inf")) < STORE_CHECK_S:
                return False
            self._read_at[key] = now
            if len(self._read_at) > MAX_REMEMBERED:  # tab keys are the visitors' to make up: forget the oldest
                del self._read_at[next(iter(self._read_at))]
        try:
            memory, metadata = self.services.store.load_memory(chat)
        except ChatStoreError:
            return False
        pending = getattr(memory, "pending", None)
        if pending is not None and pending.request_id == shown_id:
            return False
        if not session.show_answered_elsewhere(shown_id, memory, metadata.get("turns") or []):
            return False
        with self._lock:
            self._away.add(key)
        return True

    def follow(self, request: gr.Request) -> Iterator[tuple]:
        """(chat, message box, files, status, clock) of the run answered elsewhere, until it ends or pauses again;
        skipped unless `check` (or a click, `noticed`) found the decision made."""
        key = tab_key(request)
        with self._lock:
            if key not in self._follow:
                taken = False
            else:
                self._follow.discard(key)
                self._following.add(key)
                taken = True
        if not taken:
            yield (gr.skip(),) * 5
            return
        try:
            yield from self._followed(key, request)
        finally:
            with self._lock:
                self._following.discard(key)

    def _followed(self, key: str, request: gr.Request) -> Iterator[tuple]:
        session = self.services.acting_session(request)
        streamer = self.services.streamer
        shown = Shown(root_url=root_url_of(request))
        yield streamer.update(session, shown, gr.update(interactive=False))
        if self._take(self._away, key):
            for _ in self._follow_saved(session):
                yield streamer.update(session, shown)
        while session.running:
            time.sleep(FOLLOW_S)
            yield streamer.update(session, shown)
        session.wait_end_saved(END_SAVE_WAIT_S)
        yield streamer.update(session, shown, gr.update(interactive=True))

    def _follow_saved(self, session: Session) -> Iterator[None]:
        """The run answered on another replica, as that replica saves it, until the saved run has ended or paused
        (read every `POLL_S`, shown when it changed): read once, the chat could be a save made before the
        answered step finished."""
        chat, deadline = session.record.saved, time.monotonic() + AWAY_FOLLOW_S
        seen: tuple[int, str] | None = None
        while chat is not None and time.monotonic() < deadline:
            try:
                memory, metadata = self.services.store.load_memory(chat)
            except ChatStoreError:
                return
            steps = memory.steps if memory is not None else []
            tasks = [step for step in steps if isinstance(step, TaskStep)]
            now = (len(steps), tasks[-1].state if tasks else "ended")
            if now != seen and seen is not None:
                if session.record.saved is not chat or session.running:
                    return  # the tab shows something else now
                session.show_saved(memory, metadata.get("turns") or [])
                yield None
            seen = now
            if now[1]:  # the saved run ended or paused again (or there is none)
                return
            time.sleep(POLL_S)

    def after(self, request: gr.Request) -> tuple:
        """After `follow`: the panel shows what the session waits for now (skipped unless `check` hid it).

        Ticks' chains overlap on a loaded server: an earlier tick's `after` can come once a later tick's `check`
        found the decision made but before its `follow` has ended. It leaves the refresh to the chain whose
        follow is due or streams (taken then, it showed no decision while the run went on, and the tab never
        showed the next one)."""
        key = tab_key(request)
        with self._lock:
            if key in self._follow or key in self._following or key not in self._refresh:
                return (gr.skip(),) * len(VIEW_KEYS)
            self._refresh.discard(key)
        return as_tuple(view(self.services.acting_session(request).pending_shown()))


def timer_state(shown_id: Any) -> Any:
    """The timer ticks only while the panel shows a decision."""
    return gr.Timer(active=isinstance(shown_id, str) and bool(shown_id))
