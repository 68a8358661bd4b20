"""The chat tree's steps and tool calls: where an event's node goes.

Each agent step is a node (a collapsible "thought") found by (run id, parent call, step number); a tool call is
a node found by its call id, and a managed agent's steps hang under the call that started them
(event.parent_id == that call's call_id). The base of the event renderers (ui/chat/render.py,
render_execution.py, render_decisions.py), which all place their nodes through it.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agents import events as ev
from ui.chat.step_output import StepRecord
from ui.chat.tree import ChatTree, Node

if TYPE_CHECKING:  # published_files imports Gradio; the chat does not
    from ui.chat.published_files import Published


class StepTree(ChatTree):
    def __init__(self, publish: Callable[[str], Published] | None = None) -> None:
        super().__init__(publish)
        self.step_nodes: dict[tuple[str, str | None, int], Node] = {}
        self.call_nodes: dict[str, Node] = {}
        self._steps: dict[str, StepRecord] = {}  # step node id -> what it produced, for its preview
        #: The agent's step number before each run's first step, by run id: the agent numbers its steps across
        #: the whole conversation, a person counts them within the run (titles and the status must agree).
        self.run_step_offsets: dict[str, int] = {}

    def step_in_run(self, e: ev.Event) -> int:
        """The event's step numbered within its run: the run's first step is 1.

        The offset comes from the run's first step seen, not from `RunStarted.step`, so a chat rebuilt from
        saved memory (whose runs start at 0 there while its steps keep the agent's numbers) counts the same way."""
        offset = self.run_step_offsets.setdefault(e.run_id, e.step - 1)
        return max(1, e.step - offset)

    def _step_node(self, event: ev.Event) -> Node | None:
        return self.step_nodes.get((event.run_id, event.parent_id, event.step))

    def _step_parent(self, event: ev.Event) -> Node | None:
        return self.call_nodes.get(event.parent_id) if event.parent_id else None

    def _child(self, step: Node | None, key: str, title: str, event: ev.Event) -> Node:
        """The child of `step` called `key`, created on first use (top level when there is no step)."""
        node_id = f"{step.id}/{key}" if step else self._new_id(key)
        node = self.by_id.get(node_id)
        if node is None:
            node = self._add(Node(node_id, title=title, status="done"), parent=step or self._step_parent(event))
        return node
