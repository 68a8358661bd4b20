"""The AgentDeck web app: event handlers (one controller per server) and `create_app` / `launch`.

Handlers only touch the session registry; a session owns its agent and consumes the agent's events.
The streaming handler drains the session's run and returns when the run finishes or asks for a decision.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr
from starlette.middleware import Middleware

from ui.chat.published_files import root_url_of
from ui.chat.stream_outputs import EMPTY_MESSAGE, Shown, StreamOutputs, session_outputs
from ui.saved.store import secret_file, storage_is_ephemeral
from ui.session.heap import freeze_long_lived_objects
from ui.session.pending_decisions import has_pending, set_approval_mode
from ui.session.presence import PresenceMiddleware
from ui.session.registry import ServerBusyError, SessionRegistry
from ui.session.session import Session
from ui.settings import AppConfig, RunSettings, SettingsRefusedError, SignInNeededError, build_agent, model_note
from ui.web.gradio_compat import AbsoluteFileUrlMiddleware, ExampleSelectData, check_version
from ui.web.rate_limit import RateLimitedError, RunRateLimiter, visitor_of
from ui.web.security_headers import SecurityHeadersMiddleware
from ui.web.sign_in import build_page, sign_in_message, visitor_token

ASSETS = Path(__file__).resolve().parent / "assets"
#: How long a message sent from a page waits for that page's load to set up its session (`session_for`).
PAGE_LOAD_WAIT_S = 30.0

EXAMPLES: list[dict[str, Any]] = [
    {
        "display_text": "📊 Explore the penguins data set (CSV attached)",
        "text": "Explore penguins.csv: how many penguins of each species are there, and what is their average body "
                "mass? Plot flipper length against body mass, one colour per species, and save the per-species "
                "summary as species_summary.csv.",
        "files": [str(ASSETS / "penguins.csv")],
    },
    {
        "display_text": "📈 Plot sin and cos",
        "text": "Plot sin(x) and cos(x) for x from 0 to 2π on one chart with a legend, and save it as trig.png.",
    },
    {
        "display_text": "🔢 Fibonacci with code",
        "text": "What is the 30th Fibonacci number? Compute it with code.",
    },
]


DEMOS = ASSETS / "demos"
RECORDED_DEMOS: list[dict[str, Any]] = [
    {"label": "🎬 Penguins: species, body mass and a chart", "transcript": str(DEMOS / "penguins.json"),
     "text": "Explore penguins.csv: how many penguins of each species, their average body mass, and plot flipper "
             "length against body mass.", "files": [str(ASSETS / "penguins.csv")], "steps": 3},
    {"label": "🎬 Seattle weather: a monthly rainfall chart", "transcript": str(DEMOS / "weather.json"),
     "text": "Which month is the wettest in seattle-weather.csv? Chart the average precipitation per month.",
     "files": [str(ASSETS / "seattle-weather.csv")], "steps": 3},
]

class AgentDeckApp:
    def __init__(self, config: AppConfig) -> None:
        self.config = config
        self.registry = SessionRegistry(
            config.data_dir, agent_factory=lambda settings, workdir: build_agent(settings, workdir, config),
            idle_timeout_s=config.idle_timeout_s, grace_s=config.grace_s, max_upload_bytes=config.max_upload_bytes,
            pageless_idle_s=config.pageless_idle_s, max_sandboxes=config.max_sandboxes,
            decision_timeout_s=config.decision_timeout_s, reattach_grace_s=config.reattach_grace_s,
        )
        self.rate_limiter = RunRateLimiter(config.runs_per_minute, config.runs_at_once)
        self.stream_outputs: StreamOutputs | None = None  # set with the layout, which wires postprocess=False
        from ui.panels.history import HistoryController

        self.history = HistoryController(self)  # saved chats: the side list, resume, exports

    # ----- helpers -------------------------------------------------------------------------------------
    def session_for(self, request: gr.Request | None, from_page: bool = False) -> Session:
        """The tab's session; for an event `from_page`, the one its page load set up (a saved chat)."""
        key = getattr(request, "session_hash", None) or "anonymous"
        if from_page:
            self.history.wait_loaded(key, PAGE_LOAD_WAIT_S)
        return self.history.adopt(key, self.registry.get(key))

    def stream_update(self, session: Session, shown: Shown, input_update: Any = None) -> tuple:
        """One update of a streaming handler (a run, a resumed run); see ui/chat/stream_outputs.py."""
        values = session_outputs(session, shown, input_update)
        return self.stream_outputs.render(values, shown) if self.stream_outputs is not None else values

    def _stream(self, session: Session, text: str, files: list[tuple[str, str]], settings: RunSettings,
                request: gr.Request | None) -> Iterator[tuple]:
        shown = Shown(root_url=root_url_of(request))
        started = session.start_run(text, files, settings)
        if started:
            # At once: the person's message in the chat and an empty message box (the page locks the box while
            # the run streams: ui/web/input_lock.py). This first update of an event carries the whole chat (Gradio
            # sends diffs only after it), so it goes out while the run's first events gather, not with them.
            yield self.stream_update(session, shown, EMPTY_MESSAGE)
            shown.cleared_for = session.run
            yield from self.stream_run(session, shown)
        else:  # nothing started (a run is going, or nothing was sent): the person's text stays in the box
            yield self.stream_update(session, shown, gr.skip())

    def stream_run(self, session: Session, shown: Shown) -> Iterator[tuple]:
        """The updates of the session's run until it ends or pauses.

        No update here changes a property (such as the box's `interactive`): each costs Gradio milliseconds on
        its event loop, in front of every other session's updates (ui/web/input_lock.py locks the box instead).
        """
        for _ in session.drain():
            yield self.stream_update(session, shown)

    # ----- handlers ------------------------------------------------------------------------------------
    def run(self, message: dict | str | None, model: str, agent_type: str, max_steps: float, planning_interval: float,
            tools: list[str], imports: str, request: gr.Request, approval_mode: str | None = None,
            oauth_token: gr.OAuthToken | None = None, event: gr.EventData = None) -> Iterator[tuple]:
        """Send a message (text + files) and stream the agent's run."""
        session = self.session_for(request, from_page=getattr(event, "target", None) is not None)
        if isinstance(message, str):
            message = {"text": message, "files": []}
        message = message or {}
        text = str(message.get("text") or "")
        files = []
        for item in message.get("files") or []:
            path = item.get("path") if isinstance(item, dict) else str(item)
            name = (item.get("orig_name") if isinstance(item, dict) else None) or os.path.basename(path)
            files.append((path, name))
        try:
            settings = self._settings(model, agent_type, max_steps, planning_interval, tools, imports,
                                      token=oauth_token)
        except SignInNeededError:
            yield from self._ask_to_sign_in(session, request, from_page=getattr(event, "target", None) is not None)
            return
        if not (text.strip() or files):
            yield from self._stream(session, text, files, settings, request)
            return
        session.refused = self.history.leases.claim(getattr(request, "session_hash", None) or "anonymous", session)
        if session.refused is not None:  # the chat is open in another tab: nothing is sent, the text stays
            with session.lock:
                session.transcript.add_note(session.refused)
            yield self.stream_update(session, Shown(root_url=root_url_of(request)), gr.skip())
            return
        self._admit(request, session)
        set_approval_mode(session, approval_mode)
        yield from self._limited(self._stream(session, text, files, settings, request), request)

    def run_example(self, model: str, agent_type: str, max_steps: float, planning_interval: float, tools: list[str],
                    imports: str, evt: ExampleSelectData, request: gr.Request,
                    approval_mode: str | None = None, oauth_token: gr.OAuthToken | None = None) -> Iterator[tuple]:
        """Run one of the chat's examples with its bundled files: the one clicked on the page; called through the
        API (which sends no click), the first one (the penguins data set)."""
        session = self.session_for(request, from_page=getattr(evt, "target", None) is not None)
        index = getattr(evt, "index", None)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(EXAMPLES):
            index = 0
        example = EXAMPLES[index]
        files = [(path, os.path.basename(path)) for path in example.get("files", [])]
        try:
            settings = self._settings(model, agent_type, max_steps, planning_interval, tools, imports,
                                      token=oauth_token)
        except SignInNeededError:
            yield from self._ask_to_sign_in(session, request, from_page=getattr(evt, "target", None) is not None)
            return
        self._admit(request, session)
        set_approval_mode(session, approval_mode)
        yield from self._limited(self._stream(session, example["text"], files, settings, request), request)

    def _admit(self, request: gr.Request | None, session: Session) -> None:
        """One more run for this visitor and a sandbox for it, or a clear refusal (ui/web/rate_limit.py)."""
        try:
            self.rate_limiter.check(visitor_of(request))
            self.registry.make_room(session)
        except (RateLimitedError, ServerBusyError) as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    def _limited(self, updates: Iterator[tuple], request: gr.Request | None) -> Iterator[tuple]:
        """Stream `updates` while holding one of the visitor's concurrent-run places."""
        try:
            place = self.rate_limiter.running(visitor_of(request))
            place.__enter__()
        except RateLimitedError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        try:
            yield from updates
        finally:
            place.__exit__(None, None, None)

    def _settings(self, *form: Any, token: gr.OAuthToken | None = None) -> RunSettings:
        """The form's settings, checked against what the operator allows (a refusal is shown, nothing runs),
        with the signed-in visitor's own token for Hugging Face models."""
        try:
            settings = RunSettings.from_form(self.config, *form)
        except SettingsRefusedError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        hf_token = visitor_token(token)
        if hf_token:
            settings = dataclasses.replace(settings, hf_token=hf_token)
        if self.config.needs_sign_in(settings):
            raise SignInNeededError(settings.model)
        return settings

    def _ask_to_sign_in(self, session: Session, request: gr.Request | None, from_page: bool) -> Iterator[tuple]:
        """No token for a Hugging Face model. A page gets a note in the chat (not an error: nothing failed; the
        text stays in the box); an API client, which has no page and no button, an error saying how to pass one.
        `from_page`: the event came from one of the page's components (API calls name none)."""
        message = sign_in_message(self.config.hf_login, from_page, [demo["label"] for demo in RECORDED_DEMOS])
        if not from_page:
            raise gr.Error(message, print_exception=False)
        with session.lock:
            roots = session.transcript.roots
            if not roots or roots[-1].parts.get("text") != message:  # said once, however often it is tried
                session.transcript.add_note(message)
        yield self.stream_update(session, Shown(root_url=root_url_of(request)), gr.skip())

    def run_recorded(self, index: int, request: gr.Request) -> Iterator[tuple]:
        """Play one of the recorded analyses (ui/assets/demos): what the app does, without a model or a key.
        It starts a new chat (as New chat does), so each replay is the recorded analysis alone; a run going on
        is left alone (the chat says to wait for it)."""
        session = self.session_for(request)
        if not session.running:
            session.reset()
        demo = RECORDED_DEMOS[index % len(RECORDED_DEMOS)]
        settings = RunSettings(model=f"replay:{demo['transcript']}", max_steps=int(demo["steps"]) + 1,
                               authorized_imports=self.config.authorized_imports)
        files = [(path, os.path.basename(path)) for path in demo.get("files", [])]
        self._admit(request, session)
        yield from self._limited(self._stream(session, demo["text"], files, settings, request), request)

    def stop(self, request: gr.Request) -> str:
        """Stop the session's run at once (the agent interrupts its running code)."""
        session = self.registry.peek(getattr(request, "session_hash", None) or "anonymous")
        if session is not None and session.interrupt():
            return "<small>stopping…</small>"
        return gr.skip()

    def new_chat(self, request: gr.Request) -> tuple:
        """Start fresh: new memory, new sandbox, empty workspace."""
        session = self.session_for(request)
        session.reset()
        return [], gr.MultimodalTextbox(value=None, interactive=True), None, "", {"sent_at": time.time(), "events": []}

    def on_unload(self, request: gr.Request) -> None:
        """The page went away. A run going on (or waiting for a decision) is kept for the reattach grace
        period: a reloaded tab takes it back (ui/panels/approvals.py, ui/panels/history.py); else the reaper stops it,
        its steps saved. Any other session is closed."""
        key = getattr(request, "session_hash", None)
        if key:
            session = self.registry.peek(key)
            if session is not None and (session.running or has_pending(session)):
                session.detached_at = time.time()
                return
            self.registry.close(key)

    def reattach(self, request: gr.Request) -> Iterator[tuple]:
        """After a page load (or a chat opened from the list): if this tab was just handed a session whose run
        goes on (from the page before a reload, or a closed tab), stream it from where it is: the chat so far,
        then live. Only once per hand-over: a second drain would end the one this page already streams."""
        session = self.registry.peek(getattr(request, "session_hash", None) or "anonymous")
        handed_over = False
        if session is not None:
            with session.lock:
                handed_over, session.handed_over = session.handed_over, False
        if not handed_over or not session.running or session.run.waiting_decision is not None:
            yield (gr.skip(),) * 5
            return
        session.detached_at = None
        yield from self.stream_run(session, Shown(root_url=root_url_of(request)))

    @staticmethod
    def describe_model(model: str) -> str:
        return model_note(str(model or ""))


def create_app(config: AppConfig | None = None) -> tuple[gr.Blocks, AgentDeckApp]:
    from ui.layout import build_blocks

    config = config or AppConfig.from_env()
    controller = AgentDeckApp(config)
    demo = build_page(controller, build_blocks)  # without the sign-in button if Gradio's local mock fails
    if storage_is_ephemeral(config.data_dir):  # visitors are told chats may be lost; the remedy is the operator's
        logging.getLogger("agentdeck").warning(
            "AgentDeck: saved chats are in %s, which is not persistent storage on this Space: they are lost when "
            "it restarts. Mount a Storage Bucket: make space SPACE=%s ARGS=\"--bucket auto\".",
            config.data_dir, os.environ.get("SPACE_ID") or "user/name")
    return demo, controller


def launch_kwargs(config: AppConfig) -> dict[str, Any]:
    """Arguments for demo.launch(): theme/css (Gradio 6 takes them here), auth, file access, threads."""
    from ui.layout import CSS

    kwargs: dict[str, Any] = {
        "css": CSS,
        "theme": gr.themes.Soft(primary_hue="indigo"),
        # Only the bundled example files are served from where they lie. The data dir (workspaces, saved chats)
        # is not served at all: the browser gets published copies of the files it shows (ui/chat/published_files.py).
        "allowed_paths": [str(ASSETS)],
        "max_threads": max(40, 2 * config.max_runs + 8),
        "footer_links": ["api", "settings"],
        # Gradio refuses bigger uploads itself, before they are stored (the app's own check comes later).
        "max_file_size": config.max_upload_bytes,
        "app_kwargs": {"middleware": [Middleware(SecurityHeadersMiddleware), Middleware(PresenceMiddleware),
                                      Middleware(AbsoluteFileUrlMiddleware)]},
        # The data dir is allowed (above) but its signing secret must never be served.
        "blocked_paths": [str(secret_file(config.data_dir))],
    }
    if config.auth:
        kwargs["auth"] = config.auth
        kwargs["auth_message"] = "AgentDeck: sign in with the username and password the server was started with."
    return kwargs


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def launch(config: AppConfig | None = None, app: tuple[gr.Blocks, AgentDeckApp] | None = None,
           **overrides: Any) -> tuple[gr.Blocks, AgentDeckApp]:
    """Serve the app (built here unless `app` is the pair `create_app` returned)."""
    check_version()
    config = config or (app[1].config if app else AppConfig.from_env())
    demo, controller = app or create_app(config)
    controller.registry.start_reaper()
    freeze_long_lived_objects()  # after every import and the app itself: see ui/session/heap.py
    # Many threads share this process's GIL: an agent loop and an event drain per run, Gradio's event loop and
    # its workers. Handing the GIL over every 1 ms instead of 5 ms lets a drain or the event loop get in
    # sooner when many runs finish a step at once (bench/ui_load.py: the p95 with 16 sessions).
    sys.setswitchinterval(0.001)
    demo.queue(default_concurrency_limit=1)
    if threading.current_thread() is threading.main_thread():
        # SIGTERM (a Space restarting, `kill`) ends the process through SystemExit, so exit handlers run and
        # the sandbox workers, stopped between steps, are killed with it (agents/executor/process.py).
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    kwargs = launch_kwargs(config)
    kwargs.update(overrides)
    demo.launch(**kwargs)
    return demo, controller
