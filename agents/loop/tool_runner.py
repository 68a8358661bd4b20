"""ToolRunner: calls tools for an agent — events, approval pauses, argument checks and error wrapping.

Both agents use it: the ToolCallingAgent for JSON/native calls, the CodeAgent for calls that arrive
from sandboxed code over the worker channel. It keeps no run state: every call names its run (a
RunContext), and tools that need the run (`ask_user`, managed agents) get it as a ToolContext.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from agents import step_events
from agents.decisions import DecisionKind, Outcome, Rejected
from agents.decisions.pending import RunPaused, request_key
from agents.errors import ToolError
from agents.events import new_id
from agents.injection import detect_injection, fence, warning_line
from agents.loop.context import RunContext
from agents.memory.codec import json_safe
from agents.models.base import ToolCall
from agents.models.images import TextAndImage
from agents.tooling.base import Tool
from agents.tooling.context import ToolContext

MAX_EVENT_OUTPUT_CHARS = 4000
#: Tools whose output is not outside data: the answer itself, and the user's own reply.
UNSCREENED_TOOLS = frozenset({"final_answer", "ask_user"})


class ToolRunner:
    def __init__(self, tools: dict[str, Tool]) -> None:
        self.tools = tools

    def call(self, name: str, arguments: dict[str, Any], run: RunContext, call_id: str | None = None,
             positional: tuple[Any, ...] = ()) -> Any:
        """Run tool `name` in `run` with `positional` and keyword `arguments`, pausing for approval when the
        policy says so."""
        offered = self.offered(run)
        tool = offered.get(name)
        if tool is None:
            raise ToolError(f"Unknown tool {name!r}. Available tools: {', '.join(sorted(offered)) or 'none'}.")
        call_id = call_id or _resumed_call_id(run, name, positional, arguments, tool) or new_id()
        try:
            # Name positional arguments (`lookup('a')` from code) so that what a person sees, edits and
            # approves is always `{input_name: value}`; bad arguments fail here, before anyone is asked.
            shown_arguments = tool.bind_arguments(positional, arguments)
        except ToolError as exc:
            raw = {"args": list(positional), **arguments} if positional else dict(arguments)
            _finish(_start(name, call_id, raw, run), str(exc), run, is_error=True)
            raise
        arguments = shown_arguments
        record = _start(name, call_id, shown_arguments, run)
        decision = run.ask(
            DecisionKind.TOOL_CALL, {"tool_name": name, "arguments": shown_arguments, "call_id": call_id},
            tool_name=name, tool_flagged=tool.requires_approval,
        )
        if decision is not None and decision.outcome is Outcome.REJECT:
            _finish(record, decision.reason, run, rejected=True)  # the person's choice, shown as theirs
            raise Rejected(f"The user rejected the call to {name}: {decision.reason or 'no reason given'}")
        if decision is not None and decision.outcome is Outcome.EDIT:
            arguments = dict(decision.edited)
        try:
            output = tool.invoke(arguments, ToolContext(call_id=call_id, run=run))
        except Rejected as exc:  # a person rejected what the tool was about to do
            _finish(record, exc.reason, run, rejected=True)
            raise
        except RunPaused:  # a managed agent's decision ends the run (pause mode): the call is made again on resume
            raise
        except ToolError as exc:
            _finish(record, str(exc), run, is_error=True)
            raise
        except Exception as exc:
            message = f"Tool {name!r} failed: {type(exc).__name__}: {exc}"
            _finish(record, message, run, is_error=True)
            raise ToolError(message) from exc
        text = str(output)
        self._record(record, arguments, text, run)
        if len(text) > MAX_EVENT_OUTPUT_CHARS:
            text = text[:MAX_EVENT_OUTPUT_CHARS] + f"... [{len(text) - MAX_EVENT_OUTPUT_CHARS} more characters]"
        _finish(record, text, run)
        return output

    def offered(self, run: RunContext | None) -> dict[str, Tool]:
        """The tools `run` may call: those it offers (`RunOptions.tools`), else all of them."""
        return run.tools if run is not None and run.tools is not None else self.tools

    # -- what the calls of a step brought in (guard against prompt injection, agents/injection.py) --------
    def _record(self, record: step_events.ToolCallRecord, arguments: dict[str, Any], text: str,
                run: RunContext) -> None:
        """Remember a successful call in the run's step and screen its output; flagged output emits InjectionFlagged."""
        name, call_id = record.name, record.call_id
        run.tool_calls.append(ToolCall(name=name, arguments=dict(arguments), id=call_id))
        if name in UNSCREENED_TOOLS:
            return
        findings = detect_injection(text)
        if findings:
            run.tool_findings[call_id] = findings
            record.flagged = findings[0].excerpt
            run.emit(step_events.injection_flagged(record, run.event_fields()))

    def as_callables(self, run: RunContext | None) -> dict[str, Callable[..., Any]]:
        """Plain callables for the sandbox, each forwarding a call from code to `call` in `run`. With no run
        (what a sandbox is given between runs), they refuse."""
        def make(name: str) -> Callable[..., Any]:
            def proxy(*args: Any, **kwargs: Any) -> Any:
                if run is None:
                    raise ToolError(f"Tool {name!r} was called outside of a run.")
                output = self.call(name, kwargs, run, positional=args)
                if isinstance(output, TextAndImage):  # the code gets the text, the model may see the image
                    run.tool_images.append(output.image)
                    return output.text
                return output
            proxy.__name__ = name
            return proxy
        return {name: make(name) for name in self.offered(run)}


def _resumed_call_id(run: RunContext, name: str, positional: tuple[Any, ...], arguments: dict[str, Any],
                     tool: Tool) -> str | None:
    """In a resumed step (agents/decisions/pending.py), the id a call from code had when it was asked before."""
    if run.grant is None:
        return None
    try:
        shown = tool.bind_arguments(positional, arguments)
    except ToolError:
        return None
    key = request_key(DecisionKind.TOOL_CALL, {"tool_name": name, "arguments": json_safe(shown)})
    return run.grant[0].call_id_for(key)


# -- a call's record: its events are made from it (agents/step_events/), the run's step keeps it -----------
def _start(name: str, call_id: str, arguments: dict[str, Any], run: RunContext) -> step_events.ToolCallRecord:
    record = step_events.ToolCallRecord(call_id=call_id, name=name, arguments=arguments,
                                        log_offset=run.log_position())
    run.call_records.append(record)
    run.emit(step_events.tool_call_proposed(record, run.event_fields()))
    return record


def _finish(record: step_events.ToolCallRecord, output: str, run: RunContext, is_error: bool = False,
            rejected: bool = False) -> None:
    """End the call's record and emit its result; a `rejected` call's output is the person's reason."""
    record.output, record.is_error, record.rejected = output, is_error, rejected
    record.ended_at, record.finished = time.time(), True
    run.emit(step_events.tool_call_result(record, run.event_fields()))


def fenced_output(name: str, call_id: str, output: Any, run: RunContext) -> str:
    """A call's output as the model sees it: fenced as data from `tool:<name>`, a warning line first if flagged."""
    if name in UNSCREENED_TOOLS:
        return str(output)
    text = fence(output, f"tool:{name}")
    return warning_line(f"tool:{name}") + "\n" + text if call_id in run.tool_findings else text
