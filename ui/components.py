"""The page's components that several panels use, as the layout (ui/layout.py) hands them to the panels it wires.

Only names for components: they are built in the layout's Blocks; a panel's own components live with the panel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class ChatColumn:
    """What every streaming event updates, in the order of its outputs (ui/chat/stream_outputs.py)."""
    chat: Any
    task_input: Any
    files_panel: Any
    status: Any
    clock: Any

    def outputs(self) -> list[Any]:
        return [self.chat, self.task_input, self.files_panel, self.status, self.clock]


@dataclass
class SettingsForm:
    """The agent settings, in the order `RunSettings.from_form` and the handlers take them."""
    model: Any
    agent_type: Any
    max_steps: Any
    planning: Any
    tools: Any
    imports: Any

    def inputs(self) -> list[Any]:
        return [self.model, self.agent_type, self.max_steps, self.planning, self.tools, self.imports]


@dataclass
class Page:
    """The shared components: the chat column and the settings form."""
    column: ChatColumn
    form: SettingsForm
