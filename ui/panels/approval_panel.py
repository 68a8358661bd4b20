"""The approval panel under the chat and the approval mode selector: their components, and `view`, the
updates that show a session's pending decision in them (or hide the panel).

Kept apart from the handlers (ui/panels/approvals.py) so the layout can build the components and every handler
renders the panel the same way. Stable element ids: approval-mode, approval-panel, plan-editor,
plan-continue-btn, plan-reject-reason, plan-reject-btn, approval-card, edit-code, edit-tool-name, edit-args,
approve-btn, reject-btn, reject-reason, approval-message, question-card, approval-mode-covers (what the chosen mode
pauses for, with the tools it covers).
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from agents import events as ev
from agents.decisions import ApprovalPolicy
from ui.chat.safe_markdown import neutralize
from ui.session.pending_decisions import normalise_mode
from ui.tool_offer import select_tools

MODE_CHOICES = [
    ("Autonomous: never pause", "autonomous"),
    ("Review plans", "review_plans"),
    ("Approve each code step", "approve_code"),
    ("Approve sensitive tool calls", "approve_tools"),
    ("Approve everything", "all"),
]
MODE_INFO = "Applies from your next message. Questions the agent asks (ask_user) always wait for you."
TASK_PLACEHOLDER = "Type a task, attach data files, press Enter…"
ANSWER_PLACEHOLDER = "Answer the agent's question, press Enter…"

CSS = """
#approval-panel { border: 2px solid var(--color-accent); border-radius: 10px; padding: 10px 12px; }
#approval-panel .ad-approval-title h3, #approval-panel .ad-approval-title p { margin: 0 0 4px 0; }
#approval-message, #approval-message * { color: #b42318 !important; font-weight: 600; }
#edit-tool-name code { font-size: 1.05em; }
/* While a plan or an action waits, the chat makes room so the step and the panel fit on one screen. */
.gradio-container:has(#approval-card) #chat, .gradio-container:has(#plan-review) #chat { height: 44vh !important; }
"""


@dataclass
class ApprovalPanel:
    """The components of the approval panel (built inside the layout's Blocks)."""
    panel: Any
    request_id: Any
    plan_box: Any
    plan_editor: Any
    continue_btn: Any
    plan_reject_reason: Any
    plan_reject_btn: Any
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
        return [self.request_id, self.panel, self.plan_box, self.plan_editor, self.plan_reject_reason, self.card,
                self.card_title,
                self.edit_code, self.tool_name, self.edit_args, self.reject_reason, self.message,
                self.question_box, self.question_text, task_input]


VIEW_KEYS = ("request_id", "panel", "plan_box", "plan_editor", "plan_reject_reason", "card", "card_title",
             "edit_code", "tool_name", "edit_args", "reject_reason", "message", "question_box", "question_text",
             "task_input")


@dataclass
class ModeSelector:
    """The approval mode dropdown (right-hand column) and the note under it."""
    mode: Any
    note: Any


def build_mode_selector(default: str) -> ModeSelector:
    mode = gr.Dropdown(MODE_CHOICES, value=normalise_mode(default), label="Approval mode", elem_id="approval-mode",
                       info=MODE_INFO, interactive=True)
    note = gr.Markdown("", elem_id="approval-mode-note")
    return ModeSelector(mode, note)


#: Where the page keeps the approval mode the person chose since it opened (`keep_choice_after`).
CHOSEN_MODE = "window.agentdeckChosenMode"


def keep_choice_after(load: Any, mode: Any) -> None:
    """After a page load event that shows an approval mode (the owner's saved one, a handed-back run's), the
    mode the person chose on this page since it opened, if any, is shown again: a choice made while the load
    was under way would otherwise be undone by it (the server keeps it: ui/panels/approvals.py `set_mode`)."""
    load.then(None, inputs=[mode], outputs=[mode], js=f"(mode) => [{CHOSEN_MODE} ?? mode]")


def mode_coverage(mode: Any, tools: Iterable[Any]) -> str:
    """What `mode` pauses for, naming the chosen tools it covers (by the policy's own rule) and why each needs
    approval, or saying that it never pauses when none of them does."""
    policy = ApprovalPolicy.from_mode(normalise_mode(mode))
    pauses = [what for what, on in (("after each plan", policy.review_plans),
                                    ("before each code step", policy.approve_code)) if on]
    if policy.tool_calls == "none":
        return f"Pauses {' and '.join(pauses)}." if pauses else ""
    covered = policy.covered_tools(tools)
    names = ", ".join(f"**{neutralize(tool.name)}**" + (f" ({neutralize(tool.approval_reason)})"
                                                         if getattr(tool, "approval_reason", "") else "")
                      for tool in covered)
    if not covered:
        return ("⚠️ None of the chosen tools needs approval, so this mode never pauses for a tool call. "
                "Choose tools in *Agent settings*, or *Approve everything*.")
    rest = "" if policy.tool_calls == "all" else " Other tools run without asking."
    return f"Pauses {', '.join([*pauses, 'before each call to'])} {names}.{rest}"


def build_mode_coverage(mode: str, tool_names: Iterable[str]) -> Any:
    """The line under the mode selector that says what the chosen mode pauses for."""
    return gr.Markdown(mode_coverage(mode, select_tools(tuple(tool_names))), elem_id="approval-mode-covers")


def wire_mode_coverage(mode: Any, tool_names: Any, covers: Any) -> None:
    """Keep the line current when the mode or the chosen tools change (also when a reopened chat sets them)."""
    def update(chosen_mode: Any, names: Any) -> str:
        return mode_coverage(chosen_mode, select_tools(tuple(names or ())))

    for component in (mode, tool_names):
        component.change(update, inputs=[mode, tool_names], outputs=[covers], api_visibility="private",
                         concurrency_limit=None, show_progress="hidden")


def build_approval_panel() -> ApprovalPanel:
    """The panel under the chat: hidden until the agent waits for a decision."""
    request_id = gr.State(None)
    with gr.Column(visible=False, elem_id="approval-panel") as panel:
        message = gr.Markdown("", elem_id="approval-message", visible=False)  # why a click did nothing
        with gr.Column(visible=False, elem_id="plan-review") as plan_box:
            gr.Markdown("### 🧭 Review the plan above\nContinue with it, or edit it here first; or reject it and "
                        "say why (the agent is told why and goes on with its next step; it does not plan again).",
                        elem_classes="ad-approval-title")
            # Three lines that scroll (the whole plan is in the chat above): the buttons stay on the screen.
            plan_editor = gr.Textbox(label="Plan to continue with (edit it if you like)", lines=3, max_lines=8,
                                     elem_id="plan-editor", interactive=True)
            plan_reject_reason = gr.Textbox(label="Reason (sent to the agent if you reject the plan)", lines=1,
                                            max_lines=4, elem_id="plan-reject-reason", interactive=True,
                                            placeholder="e.g. do not delete anything; summarise first")
            with gr.Row():
                continue_btn = gr.Button("▶ Continue", elem_id="plan-continue-btn", variant="primary")
                plan_reject_btn = gr.Button("✖ Reject plan", elem_id="plan-reject-btn", variant="stop")
        with gr.Column(visible=False, elem_id="approval-card") as card:
            card_title = gr.Markdown("", elem_classes="ad-approval-title", elem_id="approval-title")
            # Long lines wrap: on a phone the code is read without scrolling sideways.
            edit_code = gr.Code(language="python", label="Code (you can edit it before approving)",
                                elem_id="edit-code", interactive=True, visible=False, lines=4, max_lines=24,
                                wrap_lines=True)
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
    return ApprovalPanel(panel, request_id, plan_box, plan_editor, continue_btn, plan_reject_reason, plan_reject_btn,
                         card, card_title, edit_code, tool_name, edit_args, reject_reason, approve_btn, reject_btn,
                         message, question_box, question_text)


def view_hidden(message: str = "") -> dict[str, Any]:
    """Updates that hide the panel (nothing is pending)."""
    keep, hidden = gr.skip(), gr.update(visible=False)
    return {"request_id": None, "panel": hidden, "plan_box": hidden, "plan_editor": keep, "plan_reject_reason": keep,
            "card": hidden,
            "card_title": keep, "edit_code": keep, "tool_name": keep, "edit_args": keep, "reject_reason": keep,
            "message": gr.update(value=message, visible=bool(message)), "question_box": hidden, "question_text": keep,
            "task_input": gr.update(placeholder=TASK_PLACEHOLDER)}


def view(request: ev.DecisionRequested | None, shown_id: str | None = None,
         message: str | None = None) -> dict[str, Any]:
    """Updates for the panel showing a session's pending decision, `request` (or hiding it, for None).

    When the request is the one already shown (`shown_id`), the editable boxes and the message (None) are
    left alone, so a person's edits and the last complaint are never overwritten.
    """
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
            out["plan_reject_reason"] = gr.update(value="")
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
                out["tool_name"] = gr.update(value=f"Tool: {neutralize(str(payload.get('tool_name', '')))}",
                                              visible=True)
                out["edit_args"] = gr.update(value=arguments_json(payload.get("arguments", {})), visible=True)
    elif kind == "question":
        out["question_box"] = gr.update(visible=True)
        question = neutralize(str(payload.get("question", "")))
        out["question_text"] = gr.update(value=f"### ❓ The agent asks\n{question}\n\n"
                                               "*Type your answer in the message box and press Enter.*")
        out["task_input"] = gr.update(placeholder=ANSWER_PLACEHOLDER)
    return out


def arguments_json(arguments: Any) -> str:
    """Arguments as the panel's editable JSON, keys sorted as the chat shows them (ui/chat/render_decisions.py
    `arguments_block`): a saved chat keeps them sorted, so live, reopened and panel agree."""
    return json.dumps(arguments, indent=2, ensure_ascii=False, default=str, sort_keys=True)


def as_tuple(updates: dict[str, Any]) -> tuple:
    return tuple(updates[key] for key in VIEW_KEYS)
