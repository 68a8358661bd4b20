"""Human in the loop in the web UI: the approval mode, plan review, code / tool-call approval, questions.

The agent pauses with a DecisionRequested event (agents/decisions); the session's drain stops there and the
streaming handler returns, so no web worker is held while a person decides. This module then shows the
request in a panel under the chat; a click resolves it (`agent.resolve_decision`) and a new drain of the
same run continues the chat. A question from `ask_user` is shown in the chat, and the person's next message
is the answer. A reloaded tab gets its session back (and the pending decision) with a token kept in the
tab's sessionStorage.

Stable element ids: approval-mode, approval-panel, plan-editor, plan-continue-btn, approval-card, edit-code,
edit-tool-name, edit-args, approve-btn, reject-btn, reject-reason, approval-message, question-card.
"""
from __future__ import annotations

import json
import secrets
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

import gradio as gr

from agents import events as ev
from agents.decisions import APPROVAL_MODES, ApprovalPolicy, Decision
from agents.errors import ConfigurationError
from ui.render import fence

if TYPE_CHECKING:
    from ui.app import AgentDeckApp
    from ui.sessions import Session

MODE_CHOICES = [
    ("Autonomous: never pause", "autonomous"),
    ("Review plans", "review_plans"),
    ("Approve each code step", "approve_code"),
    ("Approve sensitive tool calls", "approve_tools"),
    ("Approve everything", "all"),
]
MODE_INFO = "Applies from your next message. Questions the agent asks (ask_user) always wait for you."
PLAN_MODES = ("review_plans", "all")
TASK_PLACEHOLDER = "Type a task, attach data files, press Enter…"
ANSWER_PLACEHOLDER = "Answer the agent's question, press Enter…"
TOKEN_KEY = "agentdeck-session"

CSS = """
#approval-panel { border: 2px solid var(--color-accent); border-radius: 10px; padding: 10px 12px; }
#approval-panel .ad-approval-title h3, #approval-panel .ad-approval-title p { margin: 0 0 4px 0; }
#approval-message, #approval-message * { color: #b42318 !important; font-weight: 600; }
#edit-tool-name code { font-size: 1.05em; }
/* While a plan or an action waits, the chat makes room so the step and the panel fit on one screen. */
.gradio-container:has(#approval-card) #chat, .gradio-container:has(#plan-review) #chat { height: 44vh !important; }
"""


# ----- the session side (no Gradio) ------------------------------------------------------------------
def normalise_mode(mode: Any) -> str:
    return mode if mode in APPROVAL_MODES else "autonomous"


def apply_approval_mode(agent: Any, mode: str) -> None:
    """Give the agent (and its managed agents) the policy of `mode`. Only between runs: no thread reads it then."""
    agents = agent._agents_tree() if hasattr(agent, "_agents_tree") else [agent]
    for each in agents:
        broker = getattr(each, "broker", None)
        if broker is not None:
            broker.policy = ApprovalPolicy.from_mode(normalise_mode(mode))


def set_approval_mode(session: "Session", mode: Any) -> None:
    """The tab's approval mode for its session's next runs (None leaves it as it is)."""
    if mode is None:
        return
    with session.lock:
        session.approval_mode = normalise_mode(mode)
        if session.agent is not None and not session.running:
            apply_approval_mode(session.agent, session.approval_mode)


def pending_request(session: "Session") -> ev.DecisionRequested | None:
    """The decision the session's run is paused on and nobody has answered yet, else None."""
    with session.lock:
        run, agent = session.run, session.agent
        if run is None or run.finished or agent is None:
            return None
        waiting = run.waiting_decision
        if waiting is None or getattr(run, "answered", None) == waiting.request_id:
            return None
        try:
            pending_ids = {r.id for r in agent.pending_decisions()}
        except Exception:
            return None
        return waiting if waiting.request_id in pending_ids else None


def has_pending(session: "Session") -> bool:
    return pending_request(session) is not None


def resolve(session: "Session", request: ev.DecisionRequested, decision: Decision, shown: str = "") -> None:
    """Answer `request` and note the person's version in the chat. Raises ConfigurationError if it expired."""
    with session.lock:
        if session.run is None or session.agent is None or session.run.answered == request.request_id:
            raise ConfigurationError("This decision was already made.")  # e.g. two quick clicks
        session.agent.resolve_decision(request.request_id, decision)
        session.run.answered = request.request_id
        node = session.transcript.decision_nodes.get(request.request_id)
        if node is not None and shown:
            node.parts["edited"] = shown
    session.touch()


def answer_question(session: "Session", text: str) -> bool:
    """If the run waits for an answer to `ask_user`, `text` is that answer: resolve it. True if it was."""
    request = pending_request(session)
    if request is None or request.request_kind != "question" or not text.strip():
        return False
    with session.lock:
        session.transcript.add_user(text)
    resolve(session, request, Decision.reply(text))
    return True


def waiting_note(session: "Session") -> str | None:
    """Why a new message cannot start a run now, when the run waits for a decision."""
    request = pending_request(session)
    if request is None:
        return None
    return ("✋ The agent is waiting for your decision in the panel under the chat: approve or reject it first "
            "(or press Stop). Your message was not sent to the agent.")


def resumable(session: "Session") -> bool:
    """Claim a paused run whose decision was answered (or that was stopped) for a new drain."""
    with session.lock:
        run = session.run
        if run is None or run.finished or run.waiting_decision is None:
            return False
        if getattr(run, "answered", None) != run.waiting_decision.request_id and not run.stop_requested_at:
            return False
        run.waiting_decision = None  # claimed: a second resume finds nothing to do
        return True


# ----- the panel ---------------------------------------------------------------------------------------
@dataclass
class ApprovalPanel:
    """The components of the approval panel (built inside the layout's Blocks)."""
    panel: Any
    request_id: Any
    plan_box: Any
    plan_editor: Any
    continue_btn: Any
    card: Any
    card_title: Any
    edit_code: Any
    tool_name: Any
    edit_args: Any
    reject_reason: Any
    approve_btn: Any
    reject_btn: Any
    message: Any
    question_box: Any
    question_text: Any

    def view_outputs(self, task_input: Any) -> list[Any]:
        """The components `view` updates, in order."""
        return [self.request_id, self.panel, self.plan_box, self.plan_editor, self.card, self.card_title,
                self.edit_code, self.tool_name, self.edit_args, self.reject_reason, self.message,
                self.question_box, self.question_text, task_input]


VIEW_KEYS = ("request_id", "panel", "plan_box", "plan_editor", "card", "card_title", "edit_code", "tool_name",
             "edit_args", "reject_reason", "message", "question_box", "question_text", "task_input")


def build_mode_selector(default: str) -> tuple[Any, Any]:
    """The approval mode dropdown and the note under it."""
    mode = gr.Dropdown(MODE_CHOICES, value=normalise_mode(default), label="Approval mode", elem_id="approval-mode",
                       info=MODE_INFO, interactive=True)
    note = gr.Markdown("", elem_id="approval-mode-note")
    return mode, note


def build_approval_panel() -> ApprovalPanel:
    """The panel under the chat: hidden until the agent waits for a decision."""
    request_id = gr.State(None)
    with gr.Column(visible=False, elem_id="approval-panel") as panel:
        message = gr.Markdown("", elem_id="approval-message", visible=False)  # why a click did nothing
        with gr.Column(visible=False, elem_id="plan-review") as plan_box:
            gr.Markdown("### 🧭 Review the plan\nEdit it if you like; the agent follows the plan you continue with.",
                        elem_classes="ad-approval-title")
            plan_editor = gr.Textbox(label="Plan", lines=6, max_lines=24, elem_id="plan-editor", interactive=True)
            continue_btn = gr.Button("▶ Continue", elem_id="plan-continue-btn", variant="primary")
        with gr.Column(visible=False, elem_id="approval-card") as card:
            card_title = gr.Markdown("", elem_classes="ad-approval-title", elem_id="approval-title")
            edit_code = gr.Code(language="python", label="Code (you can edit it before approving)",
                                elem_id="edit-code", interactive=True, visible=False, lines=4, max_lines=24)
            tool_name = gr.Markdown("", elem_id="edit-tool-name", visible=False)
            edit_args = gr.Textbox(label="Arguments (JSON; you can edit them before approving)", lines=4,
                                   max_lines=20, elem_id="edit-args", visible=False, interactive=True)
            reject_reason = gr.Textbox(label="Reason (sent to the agent if you reject)", lines=1, max_lines=4,
                                       elem_id="reject-reason", placeholder="e.g. wrong recipient; use the test file",
                                       interactive=True)
            with gr.Row():
                approve_btn = gr.Button("✅ Approve", elem_id="approve-btn", variant="primary")
                reject_btn = gr.Button("✖ Reject", elem_id="reject-btn", variant="stop")
        with gr.Column(visible=False, elem_id="question-card") as question_box:
            question_text = gr.Markdown("")
    return ApprovalPanel(panel, request_id, plan_box, plan_editor, continue_btn, card, card_title, edit_code,
                         tool_name, edit_args, reject_reason, approve_btn, reject_btn, message, question_box,
                         question_text)


def view_hidden(message: str = "") -> dict[str, Any]:
    """Updates that hide the panel (nothing is pending)."""
    keep, hidden = gr.skip(), gr.update(visible=False)
    return {"request_id": None, "panel": hidden, "plan_box": hidden, "plan_editor": keep, "card": hidden,
            "card_title": keep, "edit_code": keep, "tool_name": keep, "edit_args": keep, "reject_reason": keep,
            "message": gr.update(value=message, visible=bool(message)), "question_box": hidden, "question_text": keep,
            "task_input": gr.update(placeholder=TASK_PLACEHOLDER)}


def view(session: "Session", shown_id: str | None = None, message: str | None = None) -> dict[str, Any]:
    """Updates for the panel showing the session's pending decision (or hiding it).

    When the request is the one already shown (`shown_id`), the editable boxes and the message (None) are
    left alone, so a person's edits and the last complaint are never overwritten.
    """
    request = pending_request(session)
    out = view_hidden(message or "")
    if request is None:
        return out
    same = request.request_id == shown_id
    if same and message is None:
        out["message"] = gr.skip()
    payload = request.payload or {}
    kind = request.request_kind
    out["request_id"] = request.request_id
    out["panel"] = gr.update(visible=True)
    if kind == "plan":
        out["plan_box"] = gr.update(visible=True)
        if not same:
            out["plan_editor"] = gr.update(value=str(payload.get("plan", "")))
    elif kind in ("code", "tool_call"):
        out["card"] = gr.update(visible=True)
        if not same:
            out["reject_reason"] = gr.update(value="")
            if kind == "code":
                out["card_title"] = gr.update(value="### 💻 The agent wants to run this code")
                out["edit_code"] = gr.update(value=str(payload.get("code", "")), visible=True)
                out["tool_name"] = gr.update(value="", visible=False)
                out["edit_args"] = gr.update(value="", visible=False)
            else:
                out["card_title"] = gr.update(value="### 🛠️ The agent wants to call a tool")
                out["edit_code"] = gr.update(value="", visible=False)
                out["tool_name"] = gr.update(value=f"Tool: `{payload.get('tool_name', '')}`", visible=True)
                out["edit_args"] = gr.update(value=_args_text(payload.get("arguments", {})), visible=True)
    elif kind == "question":
        out["question_box"] = gr.update(visible=True)
        out["question_text"] = gr.update(value=f"### ❓ The agent asks\n{payload.get('question', '')}\n\n"
                                               "*Type your answer in the message box and press Enter.*")
        out["task_input"] = gr.update(placeholder=ANSWER_PLACEHOLDER)
    return out


def _args_text(arguments: Any) -> str:
    return json.dumps(arguments, indent=2, ensure_ascii=False, default=str)


def _as_tuple(updates: dict[str, Any]) -> tuple:
    return tuple(updates[key] for key in VIEW_KEYS)


# ----- the handlers ------------------------------------------------------------------------------------
class ApprovalHandlers:
    """Event handlers of the panel; they use the app's session registry and its output helper."""

    def __init__(self, app: "AgentDeckApp") -> None:
        self.app = app
        self._tabs: dict[str, str] = {}  # a tab's token (kept in its sessionStorage) -> its current session key
        self._tabs_lock = threading.Lock()

    def _session(self, request: Any) -> "Session":
        return self.app.session_for(request)

    # mode -------------------------------------------------------------------------------------------
    def set_mode(self, mode: str, planning: Any, max_steps: Any, request: gr.Request) -> tuple:
        """The approval mode for this tab's next runs; plan review turns planning on when it was off."""
        mode = normalise_mode(mode)
        set_approval_mode(self._session(request), mode)
        try:
            planning_off = int(planning or 0) <= 0
        except (TypeError, ValueError):
            planning_off = True
        if mode in PLAN_MODES and planning_off:
            steps = max(1, int(max_steps or 10))
            return steps, (f"Planning was off: the agent now plans once at the start of each run "
                           f"(planning interval {steps}, in Agent settings).")
        return gr.skip(), ""

    # show -------------------------------------------------------------------------------------------
    def refresh(self, shown_id: str | None, request: gr.Request) -> tuple:
        return _as_tuple(view(self._session(request), shown_id))

    # decide -----------------------------------------------------------------------------------------
    def _decide(self, shown_id: str | None, request: gr.Request, decide) -> tuple:
        session = self._session(request)
        pending = pending_request(session)
        if pending is None or (shown_id and pending.request_id != shown_id):
            return _as_tuple(view(session, shown_id, "This decision was already made or has expired."))
        try:
            decision, shown = decide(pending)
        except ValueError as exc:  # a bad edit: say so, keep everything as it is
            return _as_tuple(view(session, pending.request_id, f"⚠️ {exc}"))
        try:
            resolve(session, pending, decision, shown)
        except Exception as exc:  # expired or refused by the agent
            return _as_tuple(view(session, shown_id, f"⚠️ {exc}"))
        return _as_tuple(view(session, pending.request_id))

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
                return Decision.approve(), ""
            return Decision.edit(edited.strip()), "**Your edited plan:**\n\n" + edited.strip()
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
                    return Decision.approve(), ""
                return Decision.edit(edited), "**Your edited code:**\n\n" + fence(edited, "python")
            if pending.request_kind == "tool_call":
                original = pending.payload.get("arguments", {})
                try:
                    edited = json.loads(args_text or "")
                except json.JSONDecodeError as exc:
                    raise ValueError(f"The arguments are not valid JSON ({exc.msg}, line {exc.lineno} column "
                                     f"{exc.colno}). Fix them and approve again; nothing was sent.") from exc
                if not isinstance(edited, dict):
                    raise ValueError('The arguments must be a JSON object, like {"name": "value"}. '
                                     "Fix them and approve again; nothing was sent.")
                if edited == original:
                    return Decision.approve(), ""
                return Decision.edit(edited), "**Your edited arguments:**\n\n" + fence(_args_text(edited), "json")
            raise ValueError("There is nothing to approve here.")
        return self._decide(shown_id, request, decide)

    def reject(self, shown_id: str | None, reason: str, request: gr.Request) -> tuple:
        """Reject the code or tool call; the reason goes to the agent."""
        def decide(pending: ev.DecisionRequested):
            if pending.request_kind not in ("code", "tool_call", "plan"):
                raise ValueError("Answer the question in the message box instead.")
            return Decision.reject(str(reason or "").strip()), ""
        return self._decide(shown_id, request, decide)

    # continue the run -------------------------------------------------------------------------------
    def resume(self, request: gr.Request) -> Iterator[tuple]:
        """Stream the rest of a paused run once its decision is answered (or it was stopped)."""
        session = self._session(request)
        seen = [-1]
        if not resumable(session):
            yield (gr.skip(),) * 5
            return
        yield self.app._outputs(session, seen, gr.update(interactive=False))
        for _ in session.drain():
            yield self.app._outputs(session, seen)
        yield self.app._outputs(session, seen, gr.update(interactive=True))

    # reload -----------------------------------------------------------------------------------------
    def restore(self, token: str, mode: str, request: gr.Request) -> tuple:
        """On page load: a reloaded tab takes back its session if it waits for a decision (with the chat and
        the panel); every tab gets a token to keep in its sessionStorage for that."""
        key = getattr(request, "session_hash", None) or "anonymous"
        registry = self.app.registry
        with self._tabs_lock:
            old_key = self._tabs.get(str(token or "")) if token else None
            if old_key is None:
                token = secrets.token_urlsafe(24)  # only tokens this server handed out are honoured
            self._tabs[token] = key
            if len(self._tabs) > 2 * len(registry) + 100:  # forget tabs whose sessions are gone
                self._tabs = {t: k for t, k in self._tabs.items() if k == key or registry.peek(k) is not None}
        session = registry.rekey(old_key, key, when=has_pending) if old_key else None
        skip = gr.skip()
        if session is None:
            return (token, skip, skip, skip, skip, *_as_tuple({**view_hidden(), "task_input": skip}))
        with session.lock:
            messages = session.transcript.messages()
            status = session.transcript.status_text()
            files = session.file_paths() or None
            session_mode = session.approval_mode
        return (token, messages, files, f"<small>{status}</small>" if status else "", session_mode,
                *_as_tuple(view(session)))


def wire(demo: gr.Blocks, app: "AgentDeckApp", panel: ApprovalPanel, mode: Any, mode_note: Any, planning: Any,
         max_steps: Any, run_outputs: list[Any], task_input: Any, chat: Any, files_panel: Any, status: Any,
         after: list[Any]) -> ApprovalHandlers:
    """Connect the panel: the mode selector, the decision buttons, the reload restore, and after each event
    in `after` (runs, examples, Stop, New chat) a resume of a stopped paused run and a panel refresh."""
    handlers = ApprovalHandlers(app)
    view_outputs = panel.view_outputs(task_input)
    quick = dict(concurrency_limit=None, show_progress="hidden")
    stream = dict(outputs=run_outputs, concurrency_limit=app.config.max_runs, concurrency_id="runs",
                  show_progress="hidden")
    private = dict(api_visibility="private")

    mode.input(handlers.set_mode, inputs=[mode, planning, max_steps], outputs=[planning, mode_note],
               api_name="set_approval_mode", **quick)

    def chain(event: Any, resume_name: str | None = None) -> None:
        resume_api = dict(api_name=resume_name) if resume_name else private
        (event.then(handlers.resume, **resume_api, **stream)
              .then(handlers.refresh, inputs=[panel.request_id], outputs=view_outputs, **private, **quick))

    chain(panel.approve_btn.click(handlers.approve, inputs=[panel.request_id, panel.edit_code, panel.edit_args],
                                  outputs=view_outputs, api_name="approve", **quick), resume_name="resume")
    chain(panel.reject_btn.click(handlers.reject, inputs=[panel.request_id, panel.reject_reason],
                                 outputs=view_outputs, api_name="reject", **quick))
    chain(panel.continue_btn.click(handlers.continue_plan, inputs=[panel.request_id, panel.plan_editor],
                                   outputs=view_outputs, api_name="continue_plan", **quick))
    for event in after:
        chain(event)

    # A reloaded tab finds its session again: the token lives in the tab's sessionStorage (per tab, kept on reload).
    token = gr.Textbox(visible=False, elem_id="session-token")
    demo.load(handlers.restore, inputs=[token, mode],
              outputs=[token, chat, files_panel, status, mode, *view_outputs],
              js=f"(token, mode) => [sessionStorage.getItem('{TOKEN_KEY}') || '', mode]",
              **private, **quick).then(
        None, inputs=[token], outputs=None,
        js=f"(token) => {{ if (token) sessionStorage.setItem('{TOKEN_KEY}', token); return []; }}")
    return handlers
