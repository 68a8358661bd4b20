"""The page's components that several panels use, as the layout (ui/layout.py) hands them to the panels it wires.

Only names for components: they are built in the layout's Blocks; a panel's own components live with the panel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ui.settings_form import SettingsForm


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
class Page:
    """The shared components: the chat column and the settings form."""
    column: ChatColumn
    form: SettingsForm[Any]  # ui/settings_form.py
