"""The chat's handlers (one AgentDeckApp per server): send a message, an example or a recorded demo, Stop,
New chat, a page going away. The page is put together by ui/layout.py and served by ui/server.py.

Handlers talk to sessions through the services (ui/services.py); a session owns its agent and consumes the
agent's events. The streaming handler drains the session's run and returns when the run finishes or asks
for a decision.
"""
from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr

from ui.chat.stream_outputs import EMPTY_MESSAGE, Shown
from ui.services import Services
from ui.session.session import Session
from ui.settings import AppConfig, RunSettings, SignInNeededError
from ui.settings_form import FormValues
from ui.web.gradio_compat import ExampleSelectData, OptionalEventData, root_url_of

WATCHING_REFUSAL = ("This chat is running in another tab: your message was not sent (it is still in the box). Wait "
                    "for the run to end, or press Stop.")
ASSETS = Path(__file__).resolve().parent / "assets"

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

#: The examples offered when the server's model is the small embedded one: one-step questions of the kinds it
#: answers (issue 18's measured kinds), so a newcomer's first click works; the analyses above need a capable model.
SMALL_MODEL_EXAMPLES: list[dict[str, Any]] = [
    {"display_text": "🔢 What is 17 × 23?", "text": "What is 17 * 23?"},
    {"display_text": "🔤 Reverse the word 'workbench'", "text": "Reverse the word 'workbench'."},
    {
        "display_text": "📊 Penguins: how many rows? (CSV attached)",
        "text": "How many rows does the table have?",
        "files": [str(ASSETS / "penguins.csv")],
    },
    {
        "display_text": "📊 Penguins: the mean body mass (CSV attached)",
        "text": "What is the mean of body_mass_g?",
        "files": [str(ASSETS / "penguins.csv")],
    },
]


def examples_for(model: str) -> list[dict[str, Any]]:
    """The chat's examples for the server's model: one-step questions for the small embedded model."""
    return SMALL_MODEL_EXAMPLES if model.split(":", 1)[0] == "embedded" else EXAMPLES


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
    def __init__(self, config: AppConfig, services: Services | None = None) -> None:
        self.services = services or Services.create(config)
        self.config = config
        self.registry = self.services.registry
        self.streamer = self.services.streamer
        self.gate = self.services.gate  # settings, sign-in, run limits and a sandbox (ui/web/run_gate.py)
        self.gate.demo_labels = [demo["label"] for demo in RECORDED_DEMOS]
        self.examples = examples_for(config.model)  # the chat's example chips (`run_example`)

    # ----- helpers -------------------------------------------------------------------------------------
    def session_for(self, request: gr.Request | None, from_page: bool = False) -> Session:
        """The tab's session; for an event `from_page`, the one its page load set up (a saved chat)."""
        return self.services.session_for(request, from_page)

    def _stream(self, session: Session, text: str, files: list[tuple[str, str]], settings: RunSettings,
                request: gr.Request | None) -> Iterator[tuple]:
        shown = Shown(root_url=root_url_of(request))
        started = session.start_run(text, files, settings)
        if started:
            # At once: the person's message in the chat and an empty message box (the page locks the box while
            # the run streams: ui/web/input_lock.py). This first update of an event carries the whole chat (Gradio
            # sends diffs only after it), so it goes out while the run's first events gather, not with them.
            yield self.streamer.update(session, shown, EMPTY_MESSAGE)
            shown.cleared_for = session.run
            yield from self.streamer.stream_run(session, shown)
        else:  # nothing started (a run is going, or nothing was sent): the person's text stays in the box
            yield self.streamer.update(session, shown, gr.skip())

    # ----- handlers ------------------------------------------------------------------------------------
    def run(self, message: dict | str | None, request: gr.Request, approval_mode: str | None = None,
            oauth_token: gr.OAuthToken | None = None, event: OptionalEventData = None,
            **form: Any) -> Iterator[tuple]:
        """Send a message (text + files) and stream the agent's run. `form`: the settings form's values, by name
        (ui/settings_form.py)."""
        session = self.session_for(request, from_page=getattr(event, "target", None) is not None)
        if isinstance(message, str):
            message = {"text": message, "files": []}
        message = message or {}
        text = str(message.get("text") or "")
        self.gate.check_message(text)  # first: nothing of a message too long is kept
        files: list[tuple[str, str]] = []
        for item in message.get("files") or []:
            path = item.get("path") if isinstance(item, dict) else str(item)
            if not isinstance(path, str):
                continue  # not a file Gradio uploaded
            name = (item.get("orig_name") if isinstance(item, dict) else None) or os.path.basename(path)
            files.append((path, name))
        try:
            settings = self.gate.settings(FormValues(**form), token=oauth_token)
        except SignInNeededError:
            yield from self.gate.ask_to_sign_in(session, request, from_page=getattr(event, "target", None) is not None)
            return
        if not (text.strip() or files):
            yield from self._stream(session, text, files, settings, request)
            return
        if self.registry.watchers.live(getattr(request, "session_hash", None) or "anonymous") is not None:
            gr.Warning(WATCHING_REFUSAL)  # shown read-only here (ui/panels/watch.py): the text stays in the box
            yield (gr.skip(),) * 5
            return
        session.record_refusal(self.services.leases.claim_message(
            getattr(request, "session_hash", None) or "anonymous", session, text))  # an answer to a question: once
        if session.refused is not None:  # the chat is open in another tab: nothing is sent, the text stays
            yield self.streamer.update(session, Shown(root_url=root_url_of(request)), gr.skip())
            return
        self.gate.admit(request, session)
        session.set_approval_mode(approval_mode)
        yield from self.gate.limited(self._stream(session, text, files, settings, request), request, session)

    def run_example(self, evt: ExampleSelectData, request: gr.Request, approval_mode: str | None = None,
                    oauth_token: gr.OAuthToken | None = None, **form: Any) -> Iterator[tuple]:
        """Run one of the chat's examples with its bundled files: the one clicked on the page; called through the
        API (which sends no click), the first one."""
        session = self.session_for(request, from_page=getattr(evt, "target", None) is not None)
        index = getattr(evt, "index", None)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(self.examples):
            index = 0
        example = self.examples[index]
        files = [(path, os.path.basename(path)) for path in example.get("files", [])]
        try:
            settings = self.gate.settings(FormValues(**form), token=oauth_token)
        except SignInNeededError:
            yield from self.gate.ask_to_sign_in(session, request, from_page=getattr(evt, "target", None) is not None)
            return
        self.gate.admit(request, session)
        session.set_approval_mode(approval_mode)
        yield from self.gate.limited(self._stream(session, example["text"], files, settings, request), request,
                                   session)

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
        self.gate.admit(request, session)
        yield from self.gate.limited(self._stream(session, demo["text"], files, settings, request), request, session)

    def stop(self, request: gr.Request) -> str:
        """Stop the session's run at once (the agent interrupts its running code)."""
        key = getattr(request, "session_hash", None) or "anonymous"
        session = self.registry.watchers.live(key) or self.registry.peek(key)  # a watched run: ui/panels/watch.py
        if session is not None and self.services.leases.stop(session):  # a paused run's decision: stopped everywhere
            return "<small>stopping…</small>"
        return gr.skip()

    def after_stop(self, request: gr.Request) -> tuple:
        """After Stop: a run that was paused at a decision has no stream to show its end (it had ended already;
        Stop dropped its decision and recorded it as stopped), so the page gets the chat and status once here.
        A live run's own stream shows its end: nothing is sent then."""
        key = getattr(request, "session_hash", None) or "anonymous"
        watch = self.registry.watchers.get(key)
        if watch is not None and watch.session.key != key:
            # A watching tab: the watch's follow shows the run's end once it is saved (ui/panels/watch.py). This
            # tab's own session holds the chat as it was when the watch began: drawn here, it could land after
            # that end and put the old chat back, with no "Stopped" in the tab whose Stop stopped the run.
            return (gr.skip(),) * 5
        session = self.registry.peek(key)
        if session is None or session.running:
            return (gr.skip(),) * 5
        return self.streamer.update(session, Shown(root_url=root_url_of(request)))

    def new_chat(self, request: gr.Request) -> tuple:
        """Start fresh: new memory, new sandbox, empty workspace. A message typed but not sent stays in the box
        (switching chats keeps it too): it may be the task the person started afresh for."""
        self.registry.watchers.forget(getattr(request, "session_hash", None) or "anonymous")
        session = self.session_for(request)
        session.reset()
        return [], gr.MultimodalTextbox(interactive=True), None, "", {"sent_at": time.time(), "events": []}

    def on_unload(self, request: gr.Request) -> None:
        """The page went away. A run going on (or waiting for a decision) is kept for the reattach grace
        period: a reloaded tab takes it back (ui/panels/approvals.py, ui/panels/history.py); else the reaper stops it,
        its steps saved. Any other session is closed."""
        key = getattr(request, "session_hash", None)
        if key:
            session = self.registry.peek(key)
            if session is not None and session.unfinished():
                session.detach()
                return
            self.registry.close(key)
