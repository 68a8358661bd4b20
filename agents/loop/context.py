"""RunContext: what every part of a running step needs to emit events and honour interrupts."""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from agents.errors import AgentInterrupted
from agents.events import Event


@dataclass
class RunContext:
    run_id: str
    emit_function: Callable[[Event], None]
    interrupt_flag: threading.Event
    parent_id: str | None = None
    step: int = 0
    #: Decisions made during the current step; the step runner moves them into the step's record.
    decisions: list[dict] = field(default_factory=list)
    #: The first prompt message this run added (its history, else its task): where it begins in the prompt.
    first_message: dict | None = None

    def emit(self, event: Event) -> None:
        self.emit_function(event)

    def check_interrupt(self) -> None:
        if self.interrupt_flag.is_set():
            raise AgentInterrupted("The run was stopped.")

    def take_decisions(self) -> list[dict]:
        taken, self.decisions = self.decisions, []
        return taken

    def event_fields(self) -> dict:
        """The fields every event of this run carries."""
        return {"run_id": self.run_id, "step": self.step, "parent_id": self.parent_id}
