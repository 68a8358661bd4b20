"""ToolContext: what the tool runner hands to a tool that needs the run it is called in.

Most tools are plain functions of their inputs. A few need the run itself: `ask_user` asks the person
through the run's decisions, a managed agent starts a sub-run whose events go into the caller's stream.
Such a tool sets `takes_context = True` and receives `context=ToolContext(...)` in `forward`; nothing
reaches it through thread-locals, so a tool called outside a run has no run to reach (it refuses).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from agents.decisions.types import Decision, DecisionKind
from agents.events import Event


class RunHandle(Protocol):
    """The parts of a run (agents/loop/context.py: RunContext) that a tool may use."""

    run_id: str
    step: int
    parent_id: str | None

    def emit(self, event: Event) -> None: ...

    def check_interrupt(self) -> None: ...

    def ask(self, kind: DecisionKind, payload: dict[str, Any], tool_name: str = "",
            tool_flagged: bool = False) -> Decision | None: ...


@dataclass(frozen=True)
class ToolContext:
    """The call being made (`call_id`, the id its events carry) and the run it belongs to."""

    call_id: str
    run: RunHandle
