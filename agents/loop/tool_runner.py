"""ToolRunner: calls tools for an agent — events, approval pauses, argument checks and error wrapping.

Both agents use it: the ToolCallingAgent for JSON/native calls, the CodeAgent for calls that arrive
from sandboxed code over the worker channel. Managed agents and `ask_user` read the current call
from a thread-local.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents import step_events
from agents.decisions import DecisionBroker, DecisionKind, Outcome, Rejected
from agents.errors import ToolError
from agents.events import new_id
from agents.guard import detect_injection, fence, warning_line
from agents.loop.context import RunContext
from agents.models.base import ToolCall
from agents.tooling.base import Tool

MAX_EVENT_OUTPUT_CHARS = 4000
#: Tools whose output is not outside data: the answer itself, and the user's own reply.
UNSCREENED_TOOLS = frozenset({"final_answer", "ask_user"})

_local = threading.local()


@dataclass
class ActiveCall:
    call_id: str
    context: RunContext


def current_call() -> ActiveCall | None:
    """The tool call running on this thread, if any."""
    return getattr(_local, "call", None)


class ToolRunner:
    def __init__(self, tools: dict[str, Tool], broker: DecisionBroker) -> None:
        self.tools = tools
        self.broker = broker
        self.context: RunContext | None = None  # set by the agent at each step
        self.begin_step()

    def call(self, name: str, arguments: dict[str, Any], context: RunContext | None = None,
             call_id: str | None = None, positional: tuple[Any, ...] = ()) -> Any:
        """Run tool `name` with `positional` and keyword `arguments`, pausing for approval when the policy says so."""
        context = context or self.context
        if context is None:
            raise ToolError(f"Tool {name!r} was called outside of a run.")
        tool = self.tools.get(name)
        if tool is None:
            raise ToolError(f"Unknown tool {name!r}. Available tools: {', '.join(sorted(self.tools)) or 'none'}.")
        call_id = call_id or new_id()
        try:
            # Name positional arguments (`lookup('a')` from code) so that what a person sees, edits and
            # approves is always `{input_name: value}`; bad arguments fail here, before anyone is asked.
            shown_arguments = tool.bind_arguments(positional, arguments)
        except ToolError as exc:
            raw = {"args": list(positional), **arguments} if positional else dict(arguments)
            self._finish(self._start(name, call_id, raw, context), str(exc), context, is_error=True)
            raise
        arguments, positional = shown_arguments, ()
        record = self._start(name, call_id, shown_arguments, context)
        decision = self.broker.ask(
            DecisionKind.TOOL_CALL, {"tool_name": name, "arguments": shown_arguments, "call_id": call_id},
            context, tool_name=name, tool_flagged=tool.requires_approval,
        )
        if decision is not None and decision.outcome is Outcome.REJECT:
            self._finish(record, f"Rejected by the user: {decision.reason}", context, is_error=True)
            raise Rejected(f"The user rejected the call to {name}: {decision.reason or 'no reason given'}")
        if decision is not None and decision.outcome is Outcome.EDIT:
            arguments = dict(decision.edited)
        previous = current_call()
        _local.call = ActiveCall(call_id=call_id, context=context)
        self.broker.bind_to_thread(context)
        try:
            output = tool(**arguments)
        except (ToolError, Rejected) as exc:
            self._finish(record, str(exc), context, is_error=True)
            raise
        except Exception as exc:
            message = f"Tool {name!r} failed: {type(exc).__name__}: {exc}"
            self._finish(record, message, context, is_error=True)
            raise ToolError(message) from exc
        finally:
            _local.call = previous
        text = str(output)
        self._record(record, {"args": list(positional), **arguments} if positional else arguments, text, context)
        if len(text) > MAX_EVENT_OUTPUT_CHARS:
            text = text[:MAX_EVENT_OUTPUT_CHARS] + f"... [{len(text) - MAX_EVENT_OUTPUT_CHARS} more characters]"
        self._finish(record, text, context)
        return output

    # -- a call's record: its events are made from it (agents/step_events.py), the step keeps it ---------
    def _start(self, name: str, call_id: str, arguments: dict[str, Any],
               context: RunContext) -> step_events.ToolCallRecord:
        record = step_events.ToolCallRecord(call_id=call_id, name=name, arguments=arguments,
                                            log_offset=self.log_position())
        self.step_records.append(record)
        context.emit(step_events.tool_call_proposed(record, context.event_fields()))
        return record

    def _finish(self, record: step_events.ToolCallRecord, output: str, context: RunContext,
                is_error: bool = False) -> None:
        record.output, record.is_error, record.ended_at, record.finished = output, is_error, time.time(), True
        context.emit(step_events.tool_call_result(record, context.event_fields()))

    def take_records(self) -> list[dict[str, Any]]:
        """The records of this step's calls, for the step (its `call_records`)."""
        return [record.as_dict() for record in self.step_records]

    # -- what the calls of a step brought in (guard against prompt injection, agents/guard.py) --------
    def begin_step(self) -> None:
        """Forget the previous step's calls; agents call this before acting."""
        self.step_calls: list[ToolCall] = []
        self.step_findings: dict[str, list] = {}
        self.step_records: list[step_events.ToolCallRecord] = []
        #: How much the step's code has printed so far (a CodeAgent sets it while its code runs).
        self.log_position: Callable[[], int] = lambda: 0

    def _record(self, record: step_events.ToolCallRecord, arguments: dict[str, Any], text: str,
                context: RunContext) -> None:
        """Remember a successful call and screen its output; flagged output emits InjectionFlagged."""
        name, call_id = record.name, record.call_id
        self.step_calls.append(ToolCall(name=name, arguments=dict(arguments), id=call_id))
        if name in UNSCREENED_TOOLS:
            return
        findings = detect_injection(text)
        if findings:
            self.step_findings[call_id] = findings
            record.flagged = findings[0].excerpt
            context.emit(step_events.injection_flagged(record, context.event_fields()))

    def fenced_output(self, name: str, call_id: str, output: Any) -> str:
        """A call's output as the model sees it: fenced as data from `tool:<name>`, a warning line first if flagged."""
        if name in UNSCREENED_TOOLS:
            return str(output)
        text = fence(output, f"tool:{name}")
        return warning_line(f"tool:{name}") + "\n" + text if call_id in self.step_findings else text

    def as_callables(self) -> dict[str, Any]:
        """Plain callables for the sandbox: each forwards a call from code to `call`."""
        def make(name: str):
            def proxy(*args: Any, **kwargs: Any) -> Any:
                return self.call(name, kwargs, positional=args)
            proxy.__name__ = name
            return proxy
        return {name: make(name) for name in self.tools}
