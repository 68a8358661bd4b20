"""How a person's decisions show in the chat: the pause, and then what they chose.

A decision is a node of its own ("✋ Decision: …") next to the step it paused. An edit also changes the step:
the plan, code or tool-call arguments shown there become the person's version (what ran), marked as theirs,
and the decision node keeps both versions. A rejection puts its reason in the decision's title, visible
without opening anything, and a rejected plan says so in the planning step. Everything comes from the
DecisionRequested / DecisionMade events, so a live run and a reopened chat (ui/saved/restore.py replays the
steps' decision records) show the same. A base of `Transcript` (ui/chat/render.py).
"""
from __future__ import annotations

import json
from typing import Any

from agents import events as ev
from ui.chat.formatting import clip, fence
from ui.chat.step_tree import StepTree
from ui.chat.tree import Node

WAITING_MARK = " · ✋ waiting for you"
EDITED_MARK = "✏️ *Edited by you before it ran:*"
#: What the decision node calls the person's version and the agent's, by request kind.
EDIT_LABELS = {"plan": ("Your edited plan", "The agent's plan"),
               "code": ("Your edited code", "The agent's code (it did not run)"),
               "tool_call": ("Your edited arguments", "The agent's arguments (not used)")}
TITLE_REASON_CHARS = 100


def arguments_block(arguments: Any) -> str:
    """Arguments as JSON, keys sorted: a saved chat stores them sorted, and a reopened chat shows the same."""
    return fence(json.dumps(arguments, indent=2, default=str, ensure_ascii=False, sort_keys=True), "json")


def _version(kind: str, value: Any) -> str:
    """A plan, code or arguments as the chat shows it."""
    if kind == "code":
        return fence(str(value), "python")
    if kind == "tool_call":
        return arguments_block(value)
    return str(value)


class DecisionRendering(StepTree):
    """The `_on_decision_requested` / `_on_decision_made` handlers of the Transcript, which sets these up."""

    waiting: str | None
    requests: dict[str, ev.DecisionRequested]  # by request id: what each decision was about
    decision_nodes: dict[str, Node]

    def add_answer(self, request_id: str, text: str) -> None:
        raise NotImplementedError

    def _on_decision_requested(self, e: ev.DecisionRequested) -> None:
        """The run pauses for a person: say what is waiting, and mark the step as waiting for them."""
        payload = e.payload or {}
        self.waiting = e.request_kind
        self.requests[e.request_id] = e
        if e.request_kind == "question":  # a plain assistant message, not a collapsed thought
            node = Node(f"decision:{e.request_id}", started=e.timestamp, parts={
                "question": f"❓ **The agent asks:** {payload.get('question', '')}",
                "hint": "*Type your answer in the message box below.*"})
        else:
            if e.request_kind == "plan":
                title, body = "review the plan", "Edit the plan below the chat if you like, then press **Continue**."
            elif e.request_kind == "code":
                title, body = "run this code?", "Approve, edit or reject the code above (in the panel below the chat)."
            elif e.request_kind == "tool_call":
                title = f"call {payload.get('tool_name', 'a tool')}?"
                body = (f"The agent wants to call **{payload.get('tool_name', '')}** with:\n\n"
                        + arguments_block(payload.get("arguments", {})))
            else:
                title = e.request_kind
                body = fence(json.dumps(payload, indent=2, default=str, ensure_ascii=False), "json")
            node = Node(f"decision:{e.request_id}", title=f"✋ Waiting for your decision: {title}",
                        status="pending", parts={"payload": body}, started=e.timestamp, waiting=True)
        self.decision_nodes[e.request_id] = node
        self._add(node, parent=self._step_parent(e))
        step = self._step_node(e)
        if step is not None and step.title and WAITING_MARK not in step.title:
            step.title += WAITING_MARK
        if step is not None:
            step.waiting = True

    def end_waiting(self) -> None:
        """The run paused at a decision was stopped (ui/session/run_control.py `_stop_paused`): no decision will
        come, so nothing says it waits any more and no spinner turns."""
        self.waiting = None
        for request_id, node in self.decision_nodes.items():
            if node.status != "pending":
                continue
            node.status, node.waiting = "done", False
            node.title = "✋ Not decided: the run was stopped"
            node.parts.pop("payload", None)  # how to decide, no longer true
            asked = self.requests.get(request_id)
            step = self._step_node(asked) if asked is not None else None
            if step is not None:
                step.waiting = False
                if step.title:
                    step.title = step.title.replace(WAITING_MARK, "")

    def resumed_request(self, e: ev.DecisionRequested) -> None:
        """A run paused at `e` resumes in this chat, which never showed `e` (reopened from the saved chat: on
        another replica, or after a restart): its decision is shown when made, as if it had been asked here."""
        self.requests.setdefault(e.request_id, e)

    def _on_decision_made(self, e: ev.DecisionMade) -> None:
        asked = self.requests.get(e.request_id)
        if e.request_id not in self.decision_nodes and asked is not None:  # see `resumed_request`
            self._on_decision_requested(asked)
        self.waiting = None
        step = self._step_node(e)
        if step is not None:
            step.waiting = False
            if step.title:
                step.title = step.title.replace(WAITING_MARK, "")
        node = self.decision_nodes.get(e.request_id)
        if node is None:
            return
        node.waiting = False
        if e.request_kind == "question":
            node.parts.pop("hint", None)
            if e.outcome == "answer":
                self.add_answer(e.request_id, e.detail)
            else:
                node.parts["hint"] = f"*Not answered{': ' + e.detail if e.detail else '.'}*"
            return
        node.status = "done"
        node.title = f"✋ Decision: {e.outcome}"
        if e.request_kind in ("plan", "code"):
            node.parts.pop("payload", None)  # how to decide, no longer true once decided
        # the person's time, as the decision recorded it (from the panel's first showing); older chats: from the ask
        waited = e.waited_s if e.waited_s is not None else e.timestamp - node.started
        node.duration = round(max(0.0, waited), 2)
        if e.outcome == "edit" and e.edited is not None:
            self._show_edit(e, node, step)
        elif e.outcome == "reject":
            reason = " ".join(e.detail.split())
            if reason:  # the reason in the title: seen without opening anything
                node.title += f" · {clip(reason, TITLE_REASON_CHARS)}"
                node.parts["detail"] = f"**Reason:** {e.detail}"
            if e.request_kind == "plan" and step is not None:
                rejected = self._child(step, "rejected-plan", "🚫 You rejected this plan", e)
                rejected.parts["text"] = f"Reason: {e.detail}" if reason else "No reason given."
        elif e.detail:
            node.parts["detail"] = e.detail

    def _show_edit(self, e: ev.DecisionMade, node: Node, step: Node | None) -> None:
        """The step shows the person's version (what ran), marked; the decision node keeps both versions."""
        request = self.requests.get(e.request_id)
        payload = request.payload if request is not None else {}
        kind = e.request_kind
        mine, theirs = EDIT_LABELS.get(kind, ("Your version", "The agent's version"))
        node.parts.pop("payload", None)  # what the agent asked for: both versions below say it
        node.parts["edited"] = f"**{mine}:**\n\n{_version(kind, e.edited)}"
        proposed = {"plan": payload.get("plan"), "code": payload.get("code"),
                    "tool_call": payload.get("arguments")}.get(kind)
        if proposed is not None:
            node.parts["proposed"] = f"**{theirs}:**\n\n{_version(kind, proposed)}"
        marked = f"{EDITED_MARK}\n\n{_version(kind, e.edited)}"
        if kind == "plan" and step is not None:
            step.parts["plan"] = marked
        elif kind == "code" and step is not None:
            step.parts["code"] = marked
        elif kind == "tool_call":
            call = self.call_nodes.get(str(payload.get("call_id", "")))
            if call is not None:
                call.parts["args"] = marked
