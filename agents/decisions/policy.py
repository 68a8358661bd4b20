"""Approval policies: which pauses happen at all."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from agents.decisions.types import Decision, DecisionKind
from agents.errors import ConfigurationError

APPROVAL_MODES = ("autonomous", "review_plans", "approve_code", "approve_tools", "all")
ToolCallApproval = Literal["none", "flagged", "all"]


@dataclass
class ApprovalPolicy:
    """Which decisions to ask for. Questions from `ask_user` are always asked.

    `tool_calls`: "none" (never pause), "flagged" (tools whose `requires_approval` is true, plus the names in
    `tools_needing_approval`), or "all". `timeout_s` bounds the wait; then `timeout_decision` applies.
    """
    review_plans: bool = False
    approve_code: bool = False
    tool_calls: ToolCallApproval = "none"
    tools_needing_approval: frozenset[str] = field(default_factory=frozenset)
    timeout_s: float | None = None
    timeout_decision: Decision = field(default_factory=lambda: Decision.reject("No decision came in time."))

    def __post_init__(self) -> None:
        if self.tool_calls not in ("none", "flagged", "all"):
            raise ConfigurationError("ApprovalPolicy.tool_calls must be 'none', 'flagged' or 'all'.")

    @classmethod
    def from_mode(cls, mode: str, **kwargs: Any) -> ApprovalPolicy:
        """Build a policy from a mode name: autonomous, review_plans, approve_code, approve_tools, all."""
        presets: dict[str, dict[str, Any]] = {
            "autonomous": {},
            "review_plans": {"review_plans": True},
            "approve_code": {"approve_code": True},
            "approve_tools": {"tool_calls": "flagged"},
            "all": {"review_plans": True, "approve_code": True, "tool_calls": "all"},
        }
        if mode not in presets:
            raise ConfigurationError(f"Unknown approval mode {mode!r}; choose one of {', '.join(APPROVAL_MODES)}.")
        return cls(**{**presets[mode], **kwargs})

    def covered_tools(self, tools: Iterable[Any]) -> list[Any]:
        """The tools whose calls this policy pauses for, by the same rule as the pause itself (the UI lists
        them next to the mode selector, so the list cannot differ from what happens)."""
        return [tool for tool in tools if self.needs_decision(
            DecisionKind.TOOL_CALL, tool_name=getattr(tool, "name", ""),
            tool_flagged=bool(getattr(tool, "requires_approval", False)))]

    def needs_decision(self, kind: DecisionKind, tool_name: str = "", tool_flagged: bool = False) -> bool:
        if kind is DecisionKind.QUESTION:
            return True
        if kind is DecisionKind.PLAN:
            return self.review_plans
        if kind is DecisionKind.CODE:
            return self.approve_code
        if self.tool_calls == "all":
            return tool_name not in ("final_answer", "ask_user")
        if self.tool_calls == "flagged":
            return tool_flagged or tool_name in self.tools_needing_approval
        return False
