"""Human in the loop in the web UI: the handlers of the approval panel and mode selector, and their wiring.

A click on the panel (ui/panels/approval_panel.py) resolves the paused run's decision (`Session.resolve`, which
calls `agent.resolve_decision`), and a new drain of the same run continues the chat. A question from `ask_user`
is shown in the chat, and the person's next message is the answer. A reloaded tab gets its session back
(and the pending decision) with a token kept in the tab's sessionStorage.
"""
from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from typing import Any

import gradio as gr

from agents import events as ev
from agents.decisions import Decision
from ui.chat.stream_outputs import Shown
from ui.components import Page
from ui.panels.answered_elsewhere import ANSWERED_AWAY, ANSWERED_HERE, POLL_S, AnsweredElsewhere, timer_state
from ui.panels.approval_panel import (
    CHOSEN_MODE,
    ApprovalPanel,
    ModeSelector,
    as_tuple,
    keep_choice_after,
    view,
    view_hidden,
)
from ui.saved.owners import tab_key
from ui.services import Services
from ui.session.pending_decisions import decision_text, edited_arguments, normalise_mode
from ui.session.session import Session
from ui.web.gradio_compat import OptionalEventData, root_url_of
from ui.web.input_lock import lock_on, unlock_after

PLAN_MODES = ("review_plans", "all")  # modes that need a plan to review
TOKEN_KEY = "agentdeck-session"


def _whole(value: Any, default: int) -> int:
    """A form's number as sent by a client, which may send anything (Gradio's slider lets NaN through)."""
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return default


# ----- the handlers ------------------------------------------------------------------------------------
class ApprovalHandlers:
    """Event handlers of the panel, built from the services (ui/services.py)."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self._tabs: dict[str, str] = {}  # a tab's token (kept in its sessionStorage) -> its current session key
        self._tabs_lock = threading.Lock()
        self.elsewhere = AnsweredElsewhere(services)  # a decision shown here, answered in another tab

    def _session(self, request: Any) -> Session:
        return self.services.acting_session(request)  # a run watched from a second tab is decided there too

    # mode -------------------------------------------------------------------------------------------
    def set_mode(self, mode: str, planning: Any, max_steps: Any, request: gr.Request,
                 event: OptionalEventData = None) -> tuple:
        """The approval mode for this tab's next runs. Plan review with planning off plans once at the start of
        each run it applies to (`ui/agent_factory.run_arguments`, per run): the planning interval setting is left
        as it is, so going back to another mode leaves no planning behind (issue 31, item 5). `max_steps` is
        not used (kept so the API's inputs stay as they were).

        A choice made on the page waits for the page's load (as a message does), so it is kept for the owner
        the load identifies and lands on the session the load set up, after the load showed the owner's saved
        mode; the page itself keeps showing the choice (`keep_choice_after`)."""
        mode = normalise_mode(mode)
        from_page = getattr(event, "target", None) is not None
        self.services.session_for(request, from_page=from_page).set_approval_mode(mode)
        owner = self.services.owners.owner_of(tab_key(request))
        if owner is not None:  # shown again after a reload and in the owner's other chats (ui/panels/history.py)
            self.services.store.set_approval_mode(owner, mode)
        if mode in PLAN_MODES and _whole(planning, 0) <= 0:
            return gr.skip(), ("Planning is off in Agent settings, so in this mode the agent plans once at the "
                               "start of each run; other modes do not plan.")
        return gr.skip(), ""

    # show -------------------------------------------------------------------------------------------
    def refresh(self, shown_id: str | None, request: gr.Request) -> tuple:
        return as_tuple(view(self._session(request).pending_shown(), shown_id))

    # decide -----------------------------------------------------------------------------------------
    def _decide(self, shown_id: str | None, request: gr.Request, decide) -> tuple:
        session = self._session(request)
        pending = session.pending_request()
        if pending is None or (shown_id and pending.request_id != shown_id):
            said = "This decision was already made or has expired."
            if shown_id and (session.running or pending is not None) \
                    and not self.elsewhere.answered_here(shown_id, request):  # made in another tab: follow it here
                self.elsewhere.noticed(request)  # the chain after the click shows the run as it is now
                if session.running:
                    gr.Info(ANSWERED_HERE)
                    return as_tuple({**view_hidden(), "task_input": gr.skip()})
                said = ("This decision was already made or has expired (maybe in another tab): the chat and this "
                        "panel now show where the run is.")
            return as_tuple(view(session.pending_request(), shown_id, said))
        try:
            decision = decide(pending)
            self.services.gate.check_message(decision_text(decision, pending))  # held to a message's limit
        except (ValueError, gr.Error) as exc:  # a bad or too long edit: say so, keep everything as it is
            why = getattr(exc, "message", None) or exc
            return as_tuple(view(session.pending_request(), pending.request_id, f"⚠️ {why}"))
        leases = self.services.leases
        refused = leases.claim_decision(session.key, session, pending.request_id)  # one tab, one replica runs it
        if refused is not None:
            if self.elsewhere.refused(session, request, shown_id):  # made on another replica: shown from the store
                gr.Info(ANSWERED_AWAY)
            return as_tuple(view(session.pending_request(), shown_id, refused))
        self.elsewhere.answering(pending.request_id, request)
        try:
            session.resolve(pending, decision)
        except Exception as exc:  # expired or refused by the agent
            leases.release_decision(pending.request_id)
            return as_tuple(view(session.pending_request(), shown_id, f"⚠️ {exc}"))
        return as_tuple(view(session.pending_request(), pending.request_id))

    def continue_plan(self, shown_id: str | None, plan: str, request: gr.Request) -> tuple:
        """Continue with the plan in the editor: an edit if it changed, else an approval."""
        def decide(pending: ev.DecisionRequested):
            if pending.request_kind != "plan":
                raise ValueError("The agent is not waiting for a plan review.")
            original = str(pending.payload.get("plan", ""))
            edited = str(plan or "")
            if not edited.strip():
                raise ValueError("The plan is empty: write a plan, or restore it by reloading the page.")
            if edited.strip() == original.strip():
                return Decision.approve()
            return Decision.edit(edited.strip())
        return self._decide(shown_id, request, decide)

    def approve(self, shown_id: str | None, code: str, args_text: str, request: gr.Request) -> tuple:
        """Approve the code or tool call: as edited, if the box was changed."""
        def decide(pending: ev.DecisionRequested):
            if pending.request_kind == "code":
                original = str(pending.payload.get("code", ""))
                edited = str(code or "")
                if not edited.strip():
                    raise ValueError("The code is empty: reject the step instead, or write some code.")
                if edited.strip() == original.strip():
                    return Decision.approve()
                return Decision.edit(edited)
            if pending.request_kind == "tool_call":
                try:
                    arguments = edited_arguments(args_text if args_text is not None else "")
                except ValueError as exc:
                    raise ValueError(f"{exc} Fix them and approve again; nothing was sent.") from exc
                if arguments == pending.payload.get("arguments", {}):
                    return Decision.approve()
                return Decision.edit(arguments)
            raise ValueError("There is nothing to approve here.")
        return self._decide(shown_id, request, decide)

    def reject(self, shown_id: str | None, reason: str, request: gr.Request) -> tuple:
        """Reject the plan, code or tool call; the reason goes to the agent."""
        def decide(pending: ev.DecisionRequested):
            if pending.request_kind not in ("code", "tool_call", "plan"):
                raise ValueError("Answer the question in the message box instead.")
            return Decision.reject(str(reason or "").strip())
        return self._decide(shown_id, request, decide)

    # continue the run -------------------------------------------------------------------------------
    def resume(self, request: gr.Request) -> Iterator[tuple]:
        """Stream the rest of a paused run once its decision is answered (or it was stopped)."""
        session = self._session(request)
        shown = Shown(root_url=root_url_of(request))  # the message box keeps what was typed during the pause
        if not session.claim_paused_run():
            yield from self.elsewhere.follow(request)  # answered in another tab: shown here (else skipped)
            return
        yield from self.services.streamer.stream_run(session, shown)

    # reload -----------------------------------------------------------------------------------------
    def restore(self, token: str, mode: str, request: gr.Request) -> tuple:
        """On page load: a reloaded tab takes back its session if its run goes on or waits for a decision (with
        the chat and the panel; `RunStreamer.reattach` then streams the run); every tab gets a token to keep
        in its sessionStorage for that."""
        key = getattr(request, "session_hash", None) or "anonymous"
        registry = self.services.registry
        with self._tabs_lock:
            old_key = self._tabs.get(str(token or "")) if token else None
            if old_key is None:
                token = secrets.token_urlsafe(24)  # only tokens this server handed out are honoured
            self._tabs[token] = key
            if len(self._tabs) > 2 * len(registry) + 100:  # forget tabs whose sessions are gone
                self._tabs = {t: k for t, k in self._tabs.items() if k == key or registry.peek(k) is not None}
        session = registry.rekey(old_key, key, when=lambda s: s.unfinished()) if old_key else None
        skip = gr.skip()
        if session is None:
            return (token, skip, skip, skip, skip, *as_tuple({**view_hidden(), "task_input": skip}))
        with session.lock:
            messages = session.record.transcript.messages()
            status = session.record.transcript.status_text()
            files = session.record.file_paths() or None
            session_mode = session.approval_mode
        return (token, messages, files, f"<small>{status}</small>" if status else "", session_mode,
                *as_tuple(view(session.pending_shown())))


def show_after(handlers: ApprovalHandlers, panel: ApprovalPanel, task_input: Any, events: list[Any]) -> None:
    """After each of `events` (the tab now shows another session, or a run handed to it streamed on), the panel
    shows that session's pending decision: a tab opened again on a paused chat gets its buttons, not only the
    chat's "waiting" line."""
    for event in events:
        event.then(handlers.refresh, inputs=[panel.request_id], outputs=panel.view_outputs(task_input),
                   api_visibility="private", concurrency_limit=None, show_progress="hidden")


def wire(demo: gr.Blocks, services: Services, panel: ApprovalPanel, selector: ModeSelector, page: Page,
         after: list[Any]) -> ApprovalHandlers:
    """Connect the panel: the mode selector, the decision buttons, the reload restore, and after each event
    in `after` (runs, examples, Stop, New chat) a resume of a stopped paused run and a panel refresh."""
    handlers = ApprovalHandlers(services)
    column, form, mode = page.column, page.form, selector.mode
    view_outputs = panel.view_outputs(column.task_input)
    quick: dict[str, Any] = dict(concurrency_limit=None, show_progress="hidden")
    # The streamer renders (ui/chat/stream_outputs.py).
    stream: dict[str, Any] = dict(outputs=column.outputs(), concurrency_limit=services.config.max_runs,
                                  concurrency_id="runs", show_progress="hidden", postprocess=False)
    private: dict[str, Any] = dict(api_visibility="private")

    mode.input(handlers.set_mode, inputs=[mode, form.planning_interval, form.max_steps],
               outputs=[form.planning_interval, selector.note], api_name="set_approval_mode",
               js=f"(mode, planning, steps) => {{ {CHOSEN_MODE} = mode; return [mode, planning, steps]; }}", **quick)

    def chain(event: Any, resume_name: str | None = None, unlock: bool = False) -> None:
        resume_api = dict(api_name=resume_name) if resume_name else private
        resumed = event.then(handlers.resume, **resume_api, **stream)
        resumed.then(handlers.refresh, inputs=[panel.request_id], outputs=view_outputs, **private, **quick)
        if unlock:
            unlock_after(resumed)

    decision_buttons = (  # (button, handler, its inputs besides the request id, API name, resume API name)
        (panel.approve_btn, handlers.approve, [panel.edit_code, panel.edit_args], "approve", "resume"),
        (panel.reject_btn, handlers.reject, [panel.reject_reason], "reject", None),
        (panel.continue_btn, handlers.continue_plan, [panel.plan_editor], "continue_plan", None),
        (panel.plan_reject_btn, handlers.reject, [panel.plan_reject_reason], "reject_plan", None),
    )
    for button, handler, inputs, name, resume_name in decision_buttons:
        lock_on(button.click)  # a decision resumes the run: the message box is locked while it streams
        chain(button.click(handler, inputs=[panel.request_id, *inputs], outputs=view_outputs, api_name=name, **quick),
              resume_name=resume_name, unlock=True)
    for event in after:
        chain(event)

    # A decision shown here and answered in another tab (or on another replica): the panel looks again while it
    # shows one, and the tab follows the run (ui/panels/answered_elsewhere.py).
    elsewhere = handlers.elsewhere
    timer = gr.Timer(POLL_S, active=False)
    panel.request_id.change(timer_state, inputs=[panel.request_id], outputs=[timer], **private, **quick)
    ticked = timer.tick(elsewhere.check, inputs=[panel.request_id], outputs=view_outputs, **private, **quick)
    followed = ticked.then(elsewhere.follow, outputs=column.outputs(), concurrency_limit=services.config.max_runs,
                           concurrency_id="watch", show_progress="hidden", postprocess=False, **private)
    followed.then(elsewhere.after, outputs=view_outputs, **private, **quick)

    # A reloaded tab finds its session again: the token lives in the tab's sessionStorage (per tab, kept on reload).
    token = gr.Textbox(visible=False, elem_id="session-token")
    restored = demo.load(handlers.restore, inputs=[token, mode],
              outputs=[token, column.chat, column.files_panel, column.status, mode, *view_outputs],
              js=f"(token, mode) => [sessionStorage.getItem('{TOKEN_KEY}') || '', mode]",
              **private, **quick).then(
        None, inputs=[token], outputs=None,
        js=f"(token) => {{ if (token) sessionStorage.setItem('{TOKEN_KEY}', token); return []; }}").then(
        services.streamer.reattach, **private, **stream)  # a run handed back to the reloaded tab streams on
    # ...to its next decision, shown in the panel: the page load's own reattach (ui/panels/history_layout.py) and
    # this one race for the hand-over, and when this one won, the chat said "approve or reject (in the panel
    # below the chat)" over no panel (issue 31).
    restored.then(handlers.refresh, inputs=[panel.request_id], outputs=view_outputs, **private, **quick)
    keep_choice_after(restored, mode)
    return handlers

