"""A paused run's decisions, seen from the agent: answered from any thread, resumed from a saved memory, and
what its runs pause for (`set_approval_policy`), for this agent and its managed agents alike.

A part of `MultiStepAgent` (agents/loop/base.py) kept apart by concept: the run itself is the StepRunner's
(`resume_steps`), the waiting is the broker's (agents/decisions/).
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from agents.decisions import ApprovalPolicy, Decision, DecisionBroker, ExternalDecider
from agents.decisions.pending import PendingDecision
from agents.errors import ConfigurationError
from agents.events import Event
from agents.loop.event_stream import EventStream
from agents.loop.model_call import Steps, drive
from agents.loop.result import RunResult, RunState
from agents.loop.tool_runner import ToolRunner
from agents.memory import AgentMemory

if TYPE_CHECKING:
    from agents.console import ConsoleRenderer


class AgentDecisions:
    memory: AgentMemory
    broker: DecisionBroker
    runner: ToolRunner
    name: str | None
    _interrupt_flag: threading.Event
    _step_number: int

    if TYPE_CHECKING:  # MultiStepAgent's, declared for the type checker only
        def _agents_tree(self) -> Iterator[Any]: ...
        def _console(self) -> ConsoleRenderer | None: ...
        def interrupt(self) -> None: ...
        def _resume_steps(self, pending: PendingDecision, decision: Decision,
                          emit: Callable[[Event], None]) -> Steps[RunResult]: ...

    def resolve_decision(self, request_id: str, decision: Any) -> None:
        """Answer a pending decision request (from the UI or any thread), here or in a managed agent."""
        for agent in self._agents_tree():
            decider = agent.broker.decider
            if isinstance(decider, ExternalDecider) and any(r.id == request_id for r in decider.pending()):
                decider.resolve(request_id, decision)
                return
        raise ConfigurationError(f"No pending decision with id {request_id!r}: it was answered or has expired.")

    def resume(self, decision: Decision, stream: bool = False, return_result: bool = False) -> Any:
        """Carry on the run that ended at `memory.pending` (pause mode) with the person's `decision`: the paused
        step acts again from its recorded reply with `decision` given for that exact request, then the run goes
        on. Works on a memory loaded in a new process (the sandbox's variables re-made first, see
        `agents.loop.restore`). Returns as `run` does. ConfigurationError when nothing waits or the decision
        does not fit the request."""
        pending = self.memory.pending
        if pending is None:
            raise ConfigurationError("No run of this agent is waiting for a decision: there is nothing to resume.")
        decision.validate_for(pending.request())
        self.memory.pending = None
        if stream:
            return EventStream(lambda emit: self._resume(pending, decision, emit), on_abandon=self.interrupt,
                               thread_name=f"agent-resume-{self.name or type(self).__name__}")
        logger = self._console()
        result = self._resume(pending, decision, logger.handle if logger else ignore_event)
        if return_result:
            return result
        if result.state is RunState.ERROR and result.exception is not None:
            raise result.exception
        return result.output

    def _resume(self, pending: PendingDecision, decision: Decision, emit: Callable[[Event], None]) -> RunResult:
        return drive(self._resume_steps(pending, decision, emit))

    def pending_decisions(self) -> list[Any]:
        pending: list[Any] = []
        for agent in self._agents_tree():
            if isinstance(agent.broker.decider, ExternalDecider):
                pending.extend(agent.broker.decider.pending())
        return pending

    def set_approval_policy(self, policy: ApprovalPolicy | str) -> None:
        """What this agent and its managed agents pause for from their next run (a policy or a mode name).
        Only between runs: no thread reads it then."""
        if isinstance(policy, str):
            policy = ApprovalPolicy.from_mode(policy)
        for agent in self._agents_tree():
            agent.broker.policy = policy


def ignore_event(event: Event) -> None:
    """Emit target for non-streamed runs with the console off."""
