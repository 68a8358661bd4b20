"""RunContext: the run object. Everything a run's parts need travels in it, passed explicitly: the ids its
events carry, where they go, the stop flag, the way to ask the person, and what the current step has gathered
(its decisions, the tool calls it made and what their output was flagged for).

Nothing of a run is kept on a thread or in a module: a tool that needs the run gets it as an argument
(agents/tooling/context.py), and code running in the sandbox reaches tools through callables bound to it.
"""
from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agents.decisions import ApprovalPolicy, Decision, DecisionBroker, DecisionKind, DecisionRequest
from agents.decisions.pending import PendingDecision
from agents.errors import AgentInterrupted
from agents.events import Event
from agents.injection import Finding
from agents.models.base import Message, ToolCall
from agents.models.images import ImageData
from agents.step_events import ToolCallRecord


def _nothing_printed() -> int:
    return 0


@dataclass
class RunContext:
    run_id: str
    emit_function: Callable[[Event], None]
    interrupt_flag: threading.Event
    #: The agent's broker: decisions asked during this run go through it (`ask`).
    broker: DecisionBroker
    parent_id: str | None = None
    #: This run's own settings (agents/loop/run_options.py), the agent's where the run gave none: its step limit,
    #: its planning interval (None: no planning), and the tools it offers (None: all of the agent's).
    max_steps: int = 20
    planning_interval: int | None = None
    tools: dict[str, Any] | None = None
    #: The approval policy this run was given (None: its agent's): the managed agents it calls get it too.
    approval_policy: ApprovalPolicy | None = None
    step: int = 0
    #: Decisions made during the current step; the step runner moves them into the step's record.
    decisions: list[dict[str, Any]] = field(default_factory=list)
    #: The current step's successful tool calls, and the injection findings in their output by call id.
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_findings: dict[str, list[Finding]] = field(default_factory=dict)
    #: Every tool call of the current step as it went (failed ones too): the step keeps them (`call_records`).
    call_records: list[ToolCallRecord] = field(default_factory=list)
    #: How much the current step's code has printed so far (a CodeAgent sets it while its code runs): where a
    #: tool call falls in the step's logs.
    log_position: Callable[[], int] = _nothing_printed
    #: The first prompt message this run added (its history, else its task): where it begins in the prompt.
    first_message: Message | None = None
    #: The event loop of `arun`/`astream`'s caller: model calls that can be awaited run there (async_api.py).
    event_loop: asyncio.AbstractEventLoop | None = None
    #: Images the current step produced for the model (agents/loop/observation_images.py): its observation
    #: message carries them.
    observation_images: list[ImageData] = field(default_factory=list)
    #: Images the current step's tool calls from code returned with their text (a browser's screenshots): the
    #: code got the text, the CodeAgent offers these to the model (`CodeAgent._observe_images`).
    tool_images: list[ImageData] = field(default_factory=list)
    #: Pause mode (agents/decisions/pending.py): a decision request ends the run (`paused` is the request)
    #: instead of waiting; `grant` is a resumed run's (pending decision, the person's decision).
    pausing: bool = False
    paused: DecisionRequest | None = None
    grant: tuple[PendingDecision, Decision] | None = None
    #: While a run's thread waits for a decision, the step runner keeps the request in memory through this
    #: (None: it was answered), so a chat saved meanwhile can be resumed after a restart.
    note_pending: Callable[[DecisionRequest | None], None] | None = None

    def emit(self, event: Event) -> None:
        self.emit_function(event)

    def pause_due(self) -> DecisionRequest | None:
        """The request this run (or, for a managed agent, its manager's run) ends at in pause mode, if any."""
        return self.paused or getattr(self.broker.outer, "paused", None)

    def check_interrupt(self) -> None:
        if self.interrupt_flag.is_set():
            raise AgentInterrupted("The run was stopped.")

    def ask(self, kind: DecisionKind, payload: dict[str, Any], tool_name: str = "",
            tool_flagged: bool = False) -> Decision | None:
        """Ask the person when the policy says so (None when it lets the action through); see DecisionBroker."""
        return self.broker.ask(kind, payload, self, tool_name=tool_name, tool_flagged=tool_flagged)

    def start_step(self, number: int) -> None:
        """Move on to step `number`: what the previous step's tool calls gathered is forgotten."""
        self.step = number
        self.tool_calls = []
        self.tool_findings = {}
        self.call_records = []
        self.log_position = _nothing_printed
        self.observation_images = []
        self.tool_images = []

    def take_decisions(self) -> list[dict[str, Any]]:
        taken, self.decisions = self.decisions, []
        return taken

    def take_call_records(self) -> list[dict[str, Any]]:
        """The current step's tool calls as plain records, for the step (its `call_records`)."""
        taken, self.call_records = self.call_records, []
        return [record.as_dict() for record in taken]

    def take_observation_images(self) -> list[ImageData]:
        taken, self.observation_images = self.observation_images, []
        return taken

    def event_fields(self) -> dict[str, Any]:
        """The fields every event of this run carries."""
        return {"run_id": self.run_id, "step": self.step, "parent_id": self.parent_id}
