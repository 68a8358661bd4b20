"""Runs as OpenTelemetry traces, built from the typed events (OpenTelemetry GenAI semantic conventions).

One `invoke_agent {name}` span per run (a managed agent's run nested under the `execute_tool` span of the call
that started it), one span per step, `chat {model}` spans with token usage, `execute_tool {name}` spans (calls
made from sandboxed code nested in the step's `execute_code` sandbox span), decisions as span events saying who
decided and how. Prompts, outputs, tool arguments and results are recorded only with `record_content`.

Spans are given the events' own times, so a span can be opened after the fact: the sandbox span starts when the
code was cleared to run (its CodeProposed, or the person's approval) and is opened when the first thing inside it
is seen.
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from agents import events as ev
from agents.models.base import TokenUsage

SCOPE = "agentdeck"


def _ns(timestamp: float) -> int:
    return int(timestamp * 1e9)


def _usage(usage: TokenUsage) -> dict[str, int]:
    return {"gen_ai.usage.input_tokens": usage.input_tokens, "gen_ai.usage.output_tokens": usage.output_tokens}


def _text(value: Any, limit: int = 8000) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def decider_label(agent: Any) -> str:
    """Who answers this agent's decisions: a person through the app or API, a script, or the terminal."""
    decider = getattr(getattr(agent, "broker", None), "decider", None)
    return {"ExternalDecider": "person", "ScriptedDecider": "script",
            "TerminalDecider": "terminal"}.get(type(decider).__name__, type(decider).__name__)


@dataclass
class _Run:
    span: Span
    agent_name: str
    model_id: str
    step: Span | None = None
    code_ready_at: float | None = None  # the step's code was cleared to run at this time (not yet run)
    sandbox: Span | None = None
    tools: dict[str, Span] = field(default_factory=dict)


class RunTracer:
    """The sink of one top-level run's events (its managed agents' too): turns them into spans."""

    def __init__(self, tracer: Tracer, record_content: bool, decided_by: str) -> None:
        self._tracer = tracer
        self._content = record_content
        self._decided_by = decided_by
        self._runs: dict[str, _Run] = {}
        self._tool_by_call: dict[str, Span] = {}  # every open tool span by call id: a managed run's parent
        self._lock = threading.Lock()  # tool calls from sandboxed code may emit from the sandbox's thread

    def __call__(self, event: ev.Event) -> None:
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            with self._lock:
                handler(self, event)

    # -- helpers -------------------------------------------------------------------------------------
    def _start(self, name: str, parent: Span | None, at: float, attributes: dict[str, Any],
               kind: SpanKind = SpanKind.INTERNAL) -> Span:
        context = trace.set_span_in_context(parent) if parent is not None else None
        return self._tracer.start_span(name, context=context, kind=kind, start_time=_ns(at), attributes=attributes)

    def _parent(self, run: _Run) -> Span:
        return run.step or run.span

    def _open_sandbox(self, run: _Run) -> Span | None:
        """The step's sandbox span, opened (at the time the code was cleared to run) if it is not yet."""
        if run.sandbox is None and run.code_ready_at is not None:
            run.sandbox = self._start("execute_code", self._parent(run), run.code_ready_at,
                                      {"gen_ai.operation.name": "execute_code"})
        return run.sandbox

    def _end_step(self, run: _Run, at: float) -> None:
        if run.sandbox is not None:
            run.sandbox.end(_ns(at))
        run.sandbox, run.code_ready_at = None, None
        if run.step is not None:
            run.step.end(_ns(at))
        run.step = None

    # -- runs and steps ------------------------------------------------------------------------------
    def _run_started(self, e: ev.RunStarted) -> None:
        parent = self._tool_by_call.get(e.parent_id) if e.parent_id else None
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": e.agent_name,
            "gen_ai.agent.id": e.run_id, "gen_ai.request.model": e.model_id, "agentdeck.run.max_steps": e.max_steps}
        if self._content:
            attributes["gen_ai.input.messages"] = _text([{"role": "user", "parts": [
                {"type": "text", "content": e.task}]}])
        # A top-level run without a parent joins the caller's current span, if any (an embedding program's).
        span = self._start(f"invoke_agent {e.agent_name}", parent, e.timestamp, attributes)
        self._runs[e.run_id] = _Run(span=span, agent_name=e.agent_name, model_id=e.model_id)

    def _step_started(self, e: ev.StepStarted) -> None:
        run = self._runs.get(e.run_id)
        if run is None:
            return
        self._end_step(run, e.timestamp)
        run.step = self._start(f"step {e.step}", run.span, e.timestamp,
                               {"agentdeck.step.number": e.step, "agentdeck.step.type": e.step_type})

    def _step_finished(self, e: ev.StepFinished) -> None:
        run = self._runs.get(e.run_id)
        if run is not None and run.step is not None:
            run.step.set_attributes(_usage(e.token_usage))
            self._end_step(run, e.timestamp)

    def _step_error(self, e: ev.StepError) -> None:
        run = self._runs.get(e.run_id)
        if run is None:
            return
        span = self._parent(run)
        attributes = {"error.type": e.error_type}
        if self._content:
            attributes["agentdeck.error.message"] = _text(e.message)
        span.add_event("step_error", attributes, timestamp=_ns(e.timestamp))
        span.set_attribute("error.type", e.error_type)
        span.set_status(Status(StatusCode.ERROR, e.error_type))

    def _final_answer(self, e: ev.FinalAnswer) -> None:
        run = self._runs.get(e.run_id)
        if run is not None and self._content:
            run.span.set_attribute("gen_ai.output.messages", _text([{"role": "assistant", "parts": [
                {"type": "text", "content": _text(e.value)}]}]))

    def _run_finished(self, e: ev.RunFinished) -> None:
        run = self._runs.pop(e.run_id, None)
        if run is None:
            return
        for call_id, span in list(run.tools.items()):  # calls cut short by a Stop
            span.end(_ns(e.timestamp))
            self._tool_by_call.pop(call_id, None)
        self._end_step(run, e.timestamp)
        run.span.set_attributes({**_usage(e.token_usage), "agentdeck.run.state": e.state,
                                 "agentdeck.run.steps": e.steps})
        if e.state == "error":
            run.span.set_attribute("error.type", (e.error or "error").split(":", 1)[0])
            run.span.set_status(Status(StatusCode.ERROR, e.error if self._content else None))
        run.span.end(_ns(e.timestamp))

    # -- the model -----------------------------------------------------------------------------------
    def _model_output(self, e: ev.ModelOutput) -> None:
        run = self._runs.get(e.run_id)
        if run is None:
            return
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": run.model_id,
                                      **_usage(e.token_usage)}
        if self._content:
            attributes["gen_ai.output.messages"] = _text([{"role": "assistant", "parts": [
                {"type": "text", "content": e.text}]}])
        span = self._start(f"chat {run.model_id}", self._parent(run), e.timestamp - e.duration_s, attributes,
                           kind=SpanKind.CLIENT)
        span.end(_ns(e.timestamp))

    def _model_retrying(self, e: ev.ModelRetrying) -> None:
        run = self._runs.get(e.run_id)
        if run is not None:
            self._parent(run).add_event("model_retrying", {
                "agentdeck.retry.reason": e.reason, "agentdeck.retry.attempt": e.attempt,
                "agentdeck.retry.wait_s": e.wait_s}, timestamp=_ns(e.timestamp))

    # -- code, sandbox, tools ------------------------------------------------------------------------
    def _code_proposed(self, e: ev.CodeProposed) -> None:
        run = self._runs.get(e.run_id)
        if run is not None:
            run.code_ready_at = e.timestamp
            if self._content and run.step is not None:
                run.step.set_attribute("agentdeck.code", _text(e.code))

    def _execution_log(self, e: ev.ExecutionLog | ev.ArtifactCreated) -> None:
        run = self._runs.get(e.run_id)
        if run is not None:
            self._open_sandbox(run)

    def _sandbox_run(self, e: ev.SandboxRun) -> None:
        run = self._runs.get(e.run_id)
        if run is None:
            return
        if run.code_ready_at is None:  # no CodeProposed seen: the span covers the run's measured time
            run.code_ready_at = e.timestamp - e.duration_s
        span = self._open_sandbox(run)
        if span is None:
            return
        span.set_attributes({"agentdeck.sandbox.backend": e.backend, "agentdeck.sandbox.duration_s": e.duration_s,
                             "agentdeck.sandbox.state_lost": e.state_lost,
                             "agentdeck.sandbox.untrusted": e.untrusted})
        if e.error_type:
            span.set_attribute("error.type", e.error_type)
            span.set_status(Status(StatusCode.ERROR, e.error_type))
        span.end(_ns(e.timestamp))
        run.sandbox, run.code_ready_at = None, None

    def _tool_call_proposed(self, e: ev.ToolCallProposed) -> None:
        run = self._runs.get(e.run_id)
        if run is None:
            return
        parent = self._open_sandbox(run) or self._parent(run)
        name = e.tool_name[:100]  # the model may name a tool that does not exist, at any length
        attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                      "gen_ai.tool.call.id": e.call_id}
        if self._content:
            attributes["gen_ai.tool.call.arguments"] = _text(e.arguments)
        span = self._start(f"execute_tool {name}", parent, e.timestamp, attributes)
        run.tools[e.call_id] = span
        self._tool_by_call[e.call_id] = span

    def _tool_call_result(self, e: ev.ToolCallResult) -> None:
        run = self._runs.get(e.run_id)
        span = run.tools.pop(e.call_id, None) if run is not None else None
        self._tool_by_call.pop(e.call_id, None)
        if span is None:
            return
        span.set_attribute("agentdeck.tool.rejected", e.rejected)
        if self._content:
            span.set_attribute("gen_ai.tool.call.result", _text(e.output))
        if e.is_error:
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR))
        span.end(_ns(e.timestamp))

    # -- decisions and the rest ----------------------------------------------------------------------
    def _decision_requested(self, e: ev.DecisionRequested) -> None:
        run = self._runs.get(e.run_id)
        if run is not None:
            self._parent(run).add_event("decision_requested", {
                "agentdeck.decision.kind": e.request_kind, "agentdeck.decision.request_id": e.request_id},
                timestamp=_ns(e.timestamp))

    def _decision_made(self, e: ev.DecisionMade) -> None:
        run = self._runs.get(e.run_id)
        if run is None:
            return
        attributes = {"agentdeck.decision.kind": e.request_kind, "agentdeck.decision.request_id": e.request_id,
                      "agentdeck.decision.outcome": e.outcome, "agentdeck.decision.by": self._decided_by}
        if self._content and e.detail:
            attributes["agentdeck.decision.detail"] = _text(e.detail)
        self._parent(run).add_event("decision", attributes, timestamp=_ns(e.timestamp))
        if e.request_kind == "code":  # the code runs from now on, or never
            run.code_ready_at = e.timestamp if e.outcome in ("approve", "edit") else None

    def _injection_flagged(self, e: ev.InjectionFlagged) -> None:
        run = self._runs.get(e.run_id)
        if run is not None:
            self._parent(run).add_event("injection_flagged", {"agentdeck.injection.source": e.source},
                                        timestamp=_ns(e.timestamp))

    def _second_attempt_finished(self, e: ev.SecondAttemptFinished) -> None:
        """An answer check's second attempt (agents/loop/second_attempt.py): whether it answered and agreed."""
        run = self._runs.get(e.run_id)
        if run is not None:
            run.span.add_event("second_attempt", {
                "agentdeck.second_attempt.answered": e.answered, "agentdeck.second_attempt.agrees": e.agrees,
                "agentdeck.second_attempt.model_calls": e.model_calls,
                "agentdeck.second_attempt.duration_s": e.duration_s}, timestamp=_ns(e.timestamp))

    def _memory_compacted(self, e: ev.MemoryCompacted) -> None:
        run = self._runs.get(e.run_id)
        if run is not None:
            self._parent(run).add_event("memory_compacted", {
                "agentdeck.compaction.tokens_before": e.tokens_before,
                "agentdeck.compaction.tokens_after": e.tokens_after,
                "agentdeck.compaction.steps_folded": e.steps_folded}, timestamp=_ns(e.timestamp))


_HANDLERS: dict[type[ev.Event], Any] = {
    ev.RunStarted: RunTracer._run_started, ev.StepStarted: RunTracer._step_started,
    ev.StepFinished: RunTracer._step_finished, ev.StepError: RunTracer._step_error,
    ev.FinalAnswer: RunTracer._final_answer, ev.RunFinished: RunTracer._run_finished,
    ev.ModelOutput: RunTracer._model_output, ev.ModelRetrying: RunTracer._model_retrying,
    ev.CodeProposed: RunTracer._code_proposed, ev.ExecutionLog: RunTracer._execution_log,
    ev.ArtifactCreated: RunTracer._execution_log, ev.SandboxRun: RunTracer._sandbox_run,
    ev.ToolCallProposed: RunTracer._tool_call_proposed, ev.ToolCallResult: RunTracer._tool_call_result,
    ev.DecisionRequested: RunTracer._decision_requested, ev.DecisionMade: RunTracer._decision_made,
    ev.InjectionFlagged: RunTracer._injection_flagged, ev.MemoryCompacted: RunTracer._memory_compacted,
    ev.SecondAttemptFinished: RunTracer._second_attempt_finished,
}


@dataclass
class TraceObserver:
    """Subscribed by `agents.telemetry.instrument`: a RunTracer for each top-level run."""
    tracer: Tracer
    record_content: bool = False

    def start_run(self, agent: Any) -> RunTracer:
        return RunTracer(self.tracer, self.record_content, decider_label(agent))
