"""What every handler that starts a run checks first: the form's settings (what the operator allows, the visitor's
sign-in), the visitor's run limits and a sandbox for the run (ui/web/rate_limit.py, the registry's cap).

One per server, a service (ui/services.py): the chat's handlers (ui/app.py) and the Retry / Edit panel
(ui/panels/retry.py) start runs through the same checks, so neither knows the other.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import gradio as gr

from agents.executor.local.worker_watch import server_disk_short, usage
from ui.chat.stream_outputs import Shown
from ui.chat.streamer import RunStreamer
from ui.session.registry import ServerBusyError, SessionRegistry
from ui.session.session import Session
from ui.settings import AppConfig, RunSettings, SettingsRefusedError, SignInNeededError
from ui.settings_form import FormValues
from ui.shared.state import SharedState
from ui.web.gradio_compat import root_url_of
from ui.web.metrics import count_refusal
from ui.web.rate_limit import RateLimitedError, RunRateLimiter, visitor_of
from ui.web.sign_in import sign_in_message, visitor_token

#: Visitors whose sessions are remembered before the ones with no session left are forgotten.
MAX_VISITORS = 10_000
#: Chat folders remembered per visitor for its disk share (the oldest forgotten first).
MAX_FOLDERS_PER_VISITOR = 1000



def refusal(message: str) -> gr.Error:
    """Why a message did not run, shown until the person closes it: nothing reached the chat, and a toast that
    faded after 10 s left only Gradio's bare "Error" over it."""
    return gr.Error(message, duration=None, print_exception=False)


def _unreachable(sessions: list[Session]) -> list[Session]:
    """The sessions whose page went away while their run waits for a decision: only the reattach of a reload
    in the same browser reaches them, until the reaper ends them."""
    return [s for s in sessions if s.detached_at is not None and s.has_pending()]


class RunGate:
    def __init__(self, config: AppConfig, registry: SessionRegistry, streamer: RunStreamer,
                 state: SharedState | None = None) -> None:
        self.config = config
        self.registry = registry
        self.streamer = streamer
        self.rate_limiter = RunRateLimiter(config.runs_per_minute, config.runs_at_once, state=state)
        self._visitor_sessions: dict[str, weakref.WeakSet[Session]] = {}  # sessions each visitor started runs in
        self._visitor_folders: dict[str, dict[str, None]] = {}  # the chat folders they were in (kept on disk)
        self._visitor_lock = threading.Lock()
        self.demo_labels: list[str] = []  # the recorded analyses' buttons, named to a visitor who needs to sign in

    def settings(self, form: FormValues, token: gr.OAuthToken | None = None) -> RunSettings:
        """The form's settings, checked against what the operator allows (a refusal is shown, nothing runs),
        with the signed-in visitor's own token for Hugging Face models. SignInNeededError without one."""
        try:
            settings = RunSettings.from_form(self.config, **form.by_name())
        except SettingsRefusedError as exc:
            raise refusal(str(exc)) from None
        hf_token = visitor_token(token)
        if hf_token:
            settings = dataclasses.replace(settings, hf_token=hf_token)
        if self.config.needs_sign_in(settings):
            raise SignInNeededError(settings.model)
        return settings

    def check_message(self, text: str) -> None:
        """A message longer than AGENTDECK_MAX_MESSAGE_CHARS is refused before anything of it is kept: the text
        stays where the person typed it, to shorten (or to attach as a file)."""
        cap = self.config.max_message_chars
        if cap and len(text) > cap:
            raise refusal(f"The message is too long: {len(text):,} characters, and this server takes at most "
                          f"{cap:,} in one message. Shorten it, or attach the text as a file.")

    def admit(self, request: gr.Request | None, session: Session) -> None:
        """One more run for this visitor and a sandbox for it, or a clear refusal (ui/web/rate_limit.py). Not
        on a disk below its floor (AGENTDECK_MIN_FREE_MB): checked before the message's files are taken in."""
        short = server_disk_short([str(self.config.data_dir)], self.config.min_free_mb)
        if short is not None:
            logging.getLogger(__name__).warning("A run was refused: %s (AGENTDECK_MIN_FREE_MB)", short)
            count_refusal("disk")
            raise refusal(f"No new runs for now: {short.split(';')[0]}). Try again later.")
        visitor = visitor_of(request)
        try:
            unreachable = self._check_unfinished(visitor, session, may_end_unreachable=True)
            self._check_disk_share(visitor, session)
            self.rate_limiter.check(visitor)
            self._end(unreachable)  # only once every other check let the run through
            self.registry.make_room(session)
        except (RateLimitedError, ServerBusyError) as exc:
            count_refusal("busy" if isinstance(exc, ServerBusyError) else "rate_limit")
            raise refusal(str(exc)) from None
        self._remember(visitor, session)

    def _check_disk_share(self, visitor: str, session: Session) -> None:
        """No new run for a visitor whose chats' folders take AGENTDECK_VISITOR_DISK_MB or more. Why: saved chats
        keep their workspaces, so a visitor starting chat after chat, each run writing up to its sandbox's
        max_disk_mb and each version of its files published, brought the shared disk to its floor, and below it
        no one's run starts."""
        limit = self.config.visitor_disk_mb
        if limit <= 0:
            return
        with self._visitor_lock:
            folders = [*self._visitor_folders.get(visitor, ()), str(session.record.root)]
            sessions = {*self._visitor_sessions.get(visitor, ()), session}
        use = usage(list(dict.fromkeys(folders)))
        # With the copies of the files their chats showed (in Gradio's folder, until each session is removed).
        used = use.bytes + sum(s.record.published_bytes for s in sessions)
        if not use.complete or used >= limit * 2**20:
            raise RateLimitedError(
                f"Your chats on this server take {used // 2**20} MB or more, the most one visitor may use "
                f"({limit} MB): delete chats you no longer need (or files in them) to start a new run.")

    def _check_unfinished(self, visitor: str, session: Session, may_end_unreachable: bool = False) -> list[Session]:
        """At most `runs_at_once` unfinished runs per visitor, paused ones included. Why: a run paused for a
        decision ends its handler (so it holds no streaming place) but keeps its sandbox place for minutes; a
        visitor starting run after run in fresh API sessions, each paused, took every sandbox of the server.

        With `may_end_unreachable` (a new message): the paused runs whose page went away that must end to make
        room (`_end`), the one whose page left first first. No page shows their decision, so the person had no run
        to answer or stop: a fresh browser of the same address (browsers closed while their panel showed) had its
        first message refused (issue 31). The visitor's runs stay at `runs_at_once`: each new one ends one of
        theirs no page holds, never anyone else's."""
        with self._visitor_lock:
            others = [s for s in self._visitor_sessions.get(visitor, ()) if s is not session]
        unfinished = [s for s in others if s.closed_at is None and s.unfinished()]  # paused: ended
        excess = len(unfinished) - self.config.runs_at_once + 1
        if excess <= 0:
            return []
        ending = sorted(_unreachable(unfinished), key=lambda s: s.detached_at or 0.0)[:excess] \
            if may_end_unreachable else []
        if len(ending) < excess:
            raise RateLimitedError(
                f"Too many runs at once: this server runs {self.config.runs_at_once} at a time for each visitor, "
                "counting runs that wait for a decision. Answer or stop one of them first, in the tab that shows it.")
        return ending

    def _end(self, unreachable: list[Session]) -> None:
        """End paused runs no page shows, as the reaper does after the reattach grace: the sandbox goes, the chat
        keeps its steps and the decision (the chat reopened offers it again)."""
        for gone in unreachable:
            logging.getLogger(__name__).info("A paused run whose page went away was ended: its visitor started a "
                                             "new one (runs_at_once)")
            self.registry.close(gone.key, expired=True)

    def _remember(self, visitor: str, session: Session) -> None:
        with self._visitor_lock:
            if visitor not in self._visitor_sessions and len(self._visitor_sessions) >= MAX_VISITORS:
                for key in [k for k, held in self._visitor_sessions.items() if not held]:
                    del self._visitor_sessions[key]  # sessions gone: their visitors are forgotten
            self._visitor_sessions.setdefault(visitor, weakref.WeakSet()).add(session)
            folders = self._visitor_folders.pop(visitor, {})  # re-inserted: the most recent visitor last
            folders.pop(str(session.record.root), None)
            folders[str(session.record.root)] = None
            self._visitor_folders[visitor] = folders
            while len(folders) > MAX_FOLDERS_PER_VISITOR:
                del folders[next(iter(folders))]
            while len(self._visitor_folders) > MAX_VISITORS:  # the visitors remembered longest ago go first
                del self._visitor_folders[next(iter(self._visitor_folders))]

    @contextmanager
    def rebuilding(self, request: gr.Request | None, session: Session, memory: Any) -> Iterator[bool]:
        """While a reopened chat's code is re-run to rebuild its variables: that is a run of the visitor's, counted
        per minute and holding one of their places at once. Yields False (nothing held) when over a limit.

        Why: opening a chat (a click, a page load, an API call from a fresh session) re-runs every code step it
        holds, each up to the execution time limit, in the queue the runs share; uncounted, one visitor opening
        a heavy chat from many sessions at once took the server's run places and its CPU."""
        steps = getattr(memory, "action_steps", None)
        if steps is None or not any(getattr(step, "code", None) for step in steps()):
            yield True  # nothing to re-run
            return
        visitor = visitor_of(request)
        try:
            self._check_unfinished(visitor, session)
            self.rate_limiter.check(visitor)
            place = self.rate_limiter.running(visitor)
            place.__enter__()
        except RateLimitedError:
            yield False
            return
        try:
            yield True
        finally:
            place.__exit__(None, None, None)

    def limited(self, updates: Iterator[tuple], request: gr.Request | None, session: Session) -> Iterator[tuple]:
        """Stream `updates` (the run `admit` let `session` start) while holding one of the visitor's concurrent-run
        places. The sandbox place promised at admission is given back at the end: a run that started holds its
        sandbox by then, and one that never did (all its files refused, an agent that could not start) would
        otherwise keep the promise for minutes, and a visitor sending such messages held every place."""
        try:
            try:
                place = self.rate_limiter.running(visitor_of(request))
                place.__enter__()
            except RateLimitedError as exc:
                count_refusal("rate_limit")
                raise refusal(str(exc)) from None
            try:
                yield from updates
            finally:
                place.__exit__(None, None, None)
        finally:
            self.registry.release(session)

    def ask_to_sign_in(self, session: Session, request: gr.Request | None, from_page: bool) -> Iterator[tuple]:
        """No token for a Hugging Face model. A page gets a note in the chat (not an error: nothing failed; the
        text stays in the box); an API client, which has no page and no button, an error saying how to pass one.
        `from_page`: the event came from one of the page's components (API calls name none)."""
        message = sign_in_message(self.config.hf_login, from_page, self.demo_labels)
        if not from_page:
            raise refusal(message)
        session.record.add_note(message, once=True)  # said once, however often it is tried
        yield self.streamer.update(session, Shown(root_url=root_url_of(request)), gr.skip())
