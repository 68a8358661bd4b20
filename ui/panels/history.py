"""Saved chats in the UI: the side list (open, rename, delete), resume after a reload or a restart. Exports of
the open chat: ui/panels/exports.py.

Who owns a chat: the browser's random token or the signed-in user (ui/saved/owners.py). Each tab's
server-side session is bound to its owner when the page loads.

Reopening a chat: its signed memory is loaded (refused as a whole when tampered with or foreign), the
conversation is rebuilt in the chat by feeding ui/chat/render.py's Transcript the events the memory's steps
stand for (`replay_memory`: agents/step_events/, the mapping the live run emitted through), a fresh agent
gets the memory (`restore_agent_memory`, so follow-ups use it with reset=False), and the sandbox's variables
are rebuilt by re-running the recorded code steps (`rebuild_sandbox_state`); a note in the chat says so and
lists steps that no longer run the same.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import gradio as gr

from ui.chat.stream_outputs import Shown, session_outputs
from ui.panels.answered_elsewhere import AnsweredElsewhere
from ui.panels.history_list import ChatListHandlers
from ui.panels.watch import END_SAVE_WAIT_S, RunWatch, locked_box
from ui.saved.model_titles import TITLE_TIMEOUT_S
from ui.saved.owners import tab_key
from ui.saved.store import ChatStoreError, settings_dict
from ui.services import Services
from ui.session.pending_decisions import normalise_mode
from ui.session.registry import ServerBusyError
from ui.session.session import Session
from ui.settings import RunSettings, SettingsRefusedError
from ui.settings_form import FormValues, saved_values, skipped
from ui.web.gradio_compat import OptionalSelectData
from ui.web.rate_limit import visitor_of


def _page_gone(session: Session) -> bool:
    """The session's page went away during its run (`AgentDeckApp.on_unload`): another tab may take the run."""
    return session.detached_at is not None


# ----- the controller --------------------------------------------------------------------------------
class HistoryController(ChatListHandlers):
    """Handlers of the side list, built from the services (ui/services.py): the sessions, the saved chats,
    the tabs' owners and the chat leases. It holds no state of its own. The list itself, its search and
    renaming are ChatListHandlers' (ui/panels/history_list.py)."""

    def __init__(self, services: Services, elsewhere: AnsweredElsewhere | None = None) -> None:
        """`elsewhere`: the approval panel's record of decisions made in other tabs (the watch tells of them)."""
        self.services = services
        self.config = services.config
        self.registry = services.registry
        self.store = services.store
        self.owners = services.owners
        self.leases = services.leases  # which tab continues which chat (ui/session/lease.py)
        self.watch = RunWatch(services, elsewhere)  # a chat running in another open tab (ui/panels/watch.py)

    # ----- identity -----------------------------------------------------------------------------
    def identify(self, state: Any, request: gr.Request | None,
                 profile: gr.OAuthProfile | None = None) -> tuple[str, dict[str, Any]]:
        """(owner key, browser state to store): see ui/saved/owners.py."""
        return self.owners.identify(state, request, profile)

    def bind(self, key: str, owner: str) -> None:
        self.owners.bind(key, owner)

    def forget(self, request: gr.Request) -> None:
        self.owners.forget(request)
        self.registry.watchers.forget(tab_key(request))

    # ----- views --------------------------------------------------------------------------------
    def _view(self, session: Session, state: Any, owner: str, settings: FormValues | None = None,
              input_update: Any = None, gr_warning: str | None = None, keep_export: bool = False) -> tuple:
        """(browser state, the chat column, the list, the settings form, the approval mode, the export box)
        showing `session`. The export box is emptied unless `keep_export` (the chat shown stays the same): an
        export of a chat no longer shown would be downloaded as this one's, or fail once that chat is deleted."""
        base = session_outputs(session, Shown(), input_update)
        chat = session.record.saved
        selected = chat.id if chat is not None and chat.kept else None
        form = settings.values() if settings is not None else skipped()
        if gr_warning:
            gr.Warning(gr_warning)
        return (state, *base, self.list_update(owner, selected), *form, self._mode(owner, session),
                gr.skip() if keep_export else None)

    def _mode(self, owner: str, session: Session) -> str:
        """The approval mode the page shows, which `session` uses: a run going on (or paused) keeps its own;
        else the mode this owner chose last (kept by ui/saved/store.py: a reload never falls back to a mode
        that pauses less), or the server's default."""
        if session.unfinished():
            return session.approval_mode
        mode = self.store.approval_mode(owner) or normalise_mode(self.config.approval_mode)
        session.set_approval_mode(mode)
        return mode

    def _fresh(self, key: str, owner: str, request: gr.Request | None, note: str | None = None) -> Session:
        session = self.registry.install(key, self.store.create(owner), visitor_of(request))
        if note:
            session.record.add_note(note)
        return session

    def _held_elsewhere(self, owner: str, chat_id: str) -> Session | None:
        """The live session (under another tab key) holding this chat, if its run goes on or waits for a
        decision."""
        return next((s for s in self._holders(owner, chat_id) if s.unfinished()), None)

    def _holders(self, owner: str, chat_id: str) -> list[Session]:
        """The live sessions that hold this saved chat."""
        def holds(session: Session) -> bool:
            chat = session.record.saved
            return chat is not None and chat.owner == owner and chat.id == chat_id

        return [s for s in self.registry.sessions() if holds(s)]

    def take_over(self, state: Any, request: gr.Request, **form: Any) -> Iterator[tuple]:
        """Take over here: reload the chat from disk in this tab, which now continues it. `form`: the settings
        form's values, by name (ui/settings_form.py), as every handler here takes them."""
        owner, state = self.identify(state, request)
        key = tab_key(request)
        session = self.registry.peek(key)
        chat_id = _saved_id(session)
        other = self.leases.holder(chat_id, key) if chat_id else None
        if session is not None and other is not None and other.running and other.detached_at is None:
            yield (*self._view(session, state, owner, keep_export=True,
                               gr_warning="The other tab is running this chat: wait for its run to end (or stop it "
                                          "there), then take over."),
                   gr.skip())
            return
        for view in self._open(key, owner, state, chat_id, FormValues(**form), request):
            yield (*view, gr.Button(visible=False))

    # ----- handlers -----------------------------------------------------------------------------
    def on_load(self, state: Any, request: gr.Request, profile: gr.OAuthProfile | None = None,
                **form: Any) -> Iterator[tuple]:
        """Page load: give the browser its identity, list its chats and reopen the one it had open."""
        try:
            yield from self._load(state, FormValues(**form), request, profile)
        finally:  # a message this page sent meanwhile waits for this (`TabOwners.wait_loaded`)
            self.owners.mark_loaded(tab_key(request))

    def _load(self, state: Any, form: FormValues, request: gr.Request,
              profile: gr.OAuthProfile | None) -> Iterator[tuple]:
        owner, state = self.identify(state, request, profile)
        key = tab_key(request)
        self.bind(key, owner)
        current = self.store.current(owner)
        live = self.registry.peek(key)
        # A live session shown again keeps its settings in the form, or the next message would start a new agent.
        live_chat = live.record.saved if live is not None else None
        # This tab already holds the chat (e.g. taken back by ui/panels/approvals.py):
        if current and live is not None and live_chat is not None and live_chat.id == current \
                and live_chat.owner == owner:
            yield self._view(live, state, owner, settings=saved_values(settings_dict(live.agent_settings), form))
            return
        paused = self._held_elsewhere(owner, current) if current else None
        # Its page went away: this tab takes it over.
        if current and paused is not None and paused.detached_at is not None:
            moved = self.registry.rekey(paused.key, key, when=lambda s: s.detached_at is not None)
            if moved is not None:  # the chat as it is; `RunStreamer.reattach` streams the rest
                self.leases.hold(current, key)
                yield self._view(moved, state, owner,
                                 settings=saved_values(settings_dict(moved.agent_settings), form))
                return
        if paused is not None and current:  # shown in another open tab (or a reloaded tab's, which
            # ui/panels/approvals.py hands back): watched here until then (ui/panels/watch.py)
            yield from self._watch(key, owner, state, paused, current, form, request)
            return
        if current and self.store.get(owner, current) is not None:
            yield from self._open(key, owner, state, current, form, request)
            return
        session = self.registry.peek(key)
        if session is None:
            session = self._fresh(key, owner, request)
        elif session.record.saved is None:  # made by another handler of this tab (never replace it: it may be running)
            session = self.services.adopt(key, session)
        yield self._view(session, state, owner)

    def open_chat(self, state: Any, chat_id: Any, request: gr.Request, clicked: OptionalSelectData = None,
                  **form: Any) -> Iterator[tuple]:
        """A click on a chat in the side list: the chat clicked, as the click named it. The list's value sent
        with the event is read after the click, so an update of the list landing at that moment (the page
        load's refresh) would turn it into None; API calls, which send no click, name the chat by value."""
        clicked_id = getattr(clicked, "value", None)
        chat_id = clicked_id if isinstance(clicked_id, str) and clicked_id else chat_id
        owner, state = self.identify(state, request)
        key = tab_key(request)
        self.bind(key, owner)
        current = self.registry.peek(key)
        if current is not None and isinstance(chat_id, str) and self._continues_here(current, key, chat_id):
            # the chat checked in the list clicked again (ui/web/gradio_dom.py CHOSEN_CHAT_CLICKABLE_JS): shown as
            # it is; reopened, its code would run again to rebuild the variables it has
            yield self._view(current, state, owner, keep_export=True)
            return
        yield from self._open(key, owner, state, chat_id, FormValues(**form), request)

    def _continues_here(self, session: Session, key: str, chat_id: str) -> bool:
        """`session` (this tab's) holds the chat `chat_id` with its agent, and no other tab holds it: this tab
        continues it. Not a chat watched here while another tab runs it (no agent of its own), one refused here
        (another tab took it: opening it again reloads it from disk), nor one whose rebuild waits for room."""
        return (_saved_id(session) == chat_id and session.agent is not None and session.refused is None
                and not self.leases.held_elsewhere(chat_id, key))

    def _open(self, key: str, owner: str, state: Any, chat_id: Any, form: FormValues,
              request: gr.Request | None = None) -> Iterator[tuple]:
        current = self.registry.peek(key)
        self.registry.watchers.forget(key)  # this tab shows the chat it opens now
        if current is not None and current.running:
            yield self._view(current, state, owner, keep_export=True,
                             gr_warning="A run is still going: wait for it or press Stop before opening another chat.")
            return
        chat = self.store.get(owner, chat_id)
        if chat is None or not chat.kept:
            kept = current is not None and _saved_id(current) is not None
            session = current if current is not None and kept else self._fresh(key, owner, request)
            yield self._view(session, state, owner, gr_warning="That chat does not exist (it may have been deleted).")
            return
        running = self._held_elsewhere(owner, chat.id)
        if running is not None and running.key != key:
            yield from self._join_run(key, owner, state, running, form, request)
            return
        for holder in self._holders(owner, chat.id):  # a run of it that just ended: read once its end is saved
            holder.wait_end_saved(END_SAVE_WAIT_S)
        try:
            memory, metadata = self.store.load_memory(chat)
        except ChatStoreError as exc:
            # Refused as a whole: nothing of it is loaded; the person gets a new chat with the reason.
            self.store.set_current(owner, None)
            meta = chat.meta()
            session = self._fresh(key, owner, request, note=f'<span class="ad-error">Could not open the saved chat '
                                                            f'“{meta.title if meta else chat.id}”</span> {exc}')
            yield self._view(session, state, owner, gr_warning=str(exc))
            return
        self.store.set_current(owner, chat.id)
        session = self.registry.install(key, chat, visitor_of(request))
        self.leases.hold(chat.id, key)
        if not session.record.reopen(memory, metadata.get("turns") or []):  # no step finished: messages only
            # (the box free: it may be locked, e.g. in a tab whose chat another tab took, ui/panels/chat_taken.py)
            yield self._view(session, state, owner, input_update=gr.MultimodalTextbox(interactive=True))
            return
        yield self._view(session, state, owner, input_update=gr.MultimodalTextbox(interactive=False))

        values = saved_values(metadata.get("settings"), form)
        try:
            settings = RunSettings.from_form(self.config, **values.by_name())
        except SettingsRefusedError as exc:  # saved under settings this server no longer offers
            config = self.config
            values = dataclasses.replace(values, model=config.model, tools=(),
                                         imports=", ".join(config.authorized_imports))
            settings = RunSettings.from_form(config, **values.by_name())
            session.record.add_note(f"This chat's saved settings are not offered here ({exc}); it continues "
                                    f"with the server's model {config.model}.")
        # Re-running its code is a run of this visitor's (limits: ui/web/run_gate.py); over them, or with no sandbox
        # free, the chat is shown and its variables are rebuilt with the next message, which is admitted as any run.
        with self.services.gate.rebuilding(request, session, memory) as allowed:
            try:
                if not allowed:
                    raise ServerBusyError("over the visitor's run limits")
                self.registry.make_room(session)  # a reopened chat's sandbox counts against the server's cap
            except ServerBusyError:
                session.restore_later(memory)
                yield self._view(session, state, owner, settings=values,
                                 input_update=gr.MultimodalTextbox(interactive=True))
                return
            session.restore_agent(memory, settings)
        shown = self.registry.peek(key)
        if shown is not session:  # another chat was opened in this tab meanwhile (ui/session/registry.py install)
            if shown is not None:  # this view would hide it: show it again, its message box free once restored
                yield self._view(shown, state, owner, keep_export=True, input_update=None if shown.record.restoring
                                 else gr.MultimodalTextbox(interactive=True))
            return
        yield self._view(session, state, owner, settings=values,
                         input_update=gr.MultimodalTextbox(interactive=True))

    def _join_run(self, key: str, owner: str, state: Any, running: Session, form: FormValues,
                  request: gr.Request | None = None) -> Iterator[tuple]:
        """Opening a chat whose run goes on in another session. Loading it from disk would show it without
        the run, and this tab's next message would save over the run's turn. A run whose page went away is
        moved to this tab (`RunStreamer.reattach` streams the rest); one shown in a live tab is left there."""
        chat_id = _saved_id(running)
        registry = self.registry
        moved = registry.rekey(running.key, key, when=_page_gone) if _page_gone(running) else None
        if moved is None:
            shown = _saved_id(registry.peek(key))
            unchanged = (state, *(gr.skip(),) * 5, self.list_update(owner, shown), *skipped(), gr.skip(), gr.skip())
            if not registry.presence.has_page(running.key):  # no page holds it (an API client's run)
                gr.Warning("This chat is running in another tab: continue it there, or open it here once its run "
                           "has ended (or that tab is closed).")
                yield unchanged
                return
            # That tab may have been closed a moment ago: the server learns so when its page's heartbeat stream
            # closes, which can come after this click. Say so, and open the chat here once it does.
            # Shown here live and read-only; if that tab has just been closed (the server learns so when its
            # page's heartbeat stream closes, which can come after this click), this tab takes the run then.
            if chat_id is not None:
                yield from self._watch(key, owner, state, running, chat_id, form, request)
            return
        self.store.set_current(owner, chat_id)
        if chat_id is not None:  # (the running session holds the chat)
            self.leases.hold(chat_id, key)
        yield self._view(moved, state, owner, settings=saved_values(settings_dict(moved.agent_settings), form))

    def _watch(self, key: str, owner: str, state: Any, running: Session, chat_id: str, form: FormValues,
               request: gr.Request | None = None) -> Iterator[tuple]:
        """Show `running`'s chat, whose run goes on in another open tab, live and read-only in this tab
        (`RunWatch.follow` streams it): this tab's own session holds the saved chat, without an agent."""
        chat = self.store.get(owner, chat_id)
        if chat is None:
            return
        own = self.registry.install(key, chat, visitor_of(request), keep_busy=True)
        settings = saved_values(settings_dict(running.agent_settings), form)
        if own is running:  # handed back to this tab meanwhile (a reload)
            yield self._view(running, state, owner, settings=settings)
            return
        self.watch.start(key, running, owner, chat_id)
        yield self._view(running, state, owner, settings=settings, input_update=locked_box())

    def after_new_chat(self, state: Any, request: gr.Request) -> tuple:
        """After New chat: this browser's open chat is the new (empty) one; refresh the list and empty the
        export box (its file is the other chat's)."""
        owner, state = self.identify(state, request)
        key = tab_key(request)
        self.bind(key, owner)
        session = self.registry.peek(key)
        if session is not None:
            self.services.adopt(key, session)
        # A chat clicked in the list at once may be open already (this runs after New chat's own event): it stays
        # this browser's current chat and checked (the list ended with none checked, and a reload would have
        # shown an empty chat instead).
        opened = session.record.saved if session is not None else None
        if opened is not None and opened.kept:
            return state, self.list_update(owner, opened.id), gr.skip()
        self.store.set_current(owner, None)
        return state, self.list_update(owner), None

    def refresh(self, state: Any, request: gr.Request) -> tuple:
        """The side list after a run (a new chat appears once its first message is sent)."""
        owner, state = self.identify(state, request)
        session = self.registry.peek(tab_key(request))
        return state, self.list_update(owner, _saved_id(session)), self.takeover_button(request)

    def takeover_button(self, request: gr.Request) -> Any:
        """"Take over here", shown while the chat this tab shows is refused to it (another tab holds it). After a
        chat is opened too: the button stayed under another chat, one no other tab held."""
        session = self.registry.peek(tab_key(request))
        refused = session is not None and session.refused is not None
        deleted = session is not None and session.record.saved is not None and session.record.saved.deleted
        return gr.Button(visible=refused and not deleted)

    def await_title(self, state: Any, request: gr.Request) -> tuple:
        """After a run's list refresh: wait (in this event, not the run's) for the title the chat's model is asked
        for (ui/session/title_job.py), then the list and the status line again; nothing changes if none is."""
        owner, _ = self.identify(state, request)
        session = self.registry.peek(tab_key(request))
        if session is None:
            return gr.skip(), gr.skip()
        session.titles.wait(TITLE_TIMEOUT_S + 2.0)  # at once when none was asked for (or it came already)
        status = gr.skip() if session.running else session.record.transcript.status_text()
        return self.list_update(owner, _saved_id(session)), status

    def delete_chat(self, state: Any, chat_id: Any, request: gr.Request) -> tuple:
        owner, state = self.identify(state, request)
        key = tab_key(request)
        current = self.registry.peek(key)
        is_open = current is not None and _saved_id(current) == chat_id
        if is_open and current is not None and current.running:
            return self._view(current, state, owner, keep_export=True,
                              gr_warning="This chat is running: press Stop first.")
        if not self.store.delete(owner, chat_id):
            session = current or self._fresh(key, owner, request)
            return self._view(session, state, owner, gr_warning="That chat does not exist.")
        if is_open or current is None:
            if current is not None:
                current.record.forget_saved()  # its folder is gone
            session = self._fresh(key, owner, request)
            return self._view(session, state, owner)
        return self._view(current, state, owner)


def _saved_id(session: Session | None) -> str | None:
    """The id of the saved chat `session` holds, if any."""
    chat = session.record.saved if session is not None else None
    return chat.id if chat is not None else None
