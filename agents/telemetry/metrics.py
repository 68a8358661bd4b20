"""Run metrics for Prometheus, counted from the typed events: runs, steps, errors by kind, model tokens and call
time, tool calls, sandbox runs, decisions. Subscribed like the tracer (agents/telemetry/hub.py), so nothing is
counted, and nothing costs, until a program subscribes it: `subscribe(EventMetrics(registry))`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from agents import events as ev

# Label values a run can choose (an error kind from a sandbox's result, a tool name the model made up) are kept to
# this many distinct values per label; past it they count as "other", so a visitor cannot grow the metrics.
_MAX_LABEL_VALUES = 64
_SECONDS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


@dataclass
class _Instruments:
    runs: Counter
    steps: Counter
    errors: Counter
    tokens: Counter
    model_seconds: Histogram
    tool_calls: Counter
    sandbox_runs: Counter
    sandbox_seconds: Histogram
    decisions: Counter


class EventMetrics:
    """A RunObserver whose sink counts every top-level run's events (its managed agents' included)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._seen: dict[str, set[str]] = {}
        self._m = _Instruments(
            runs=Counter("agentdeck_runs", "Agent runs that ended, by how (success, max_steps, interrupted, error).",
                         ["state"], registry=registry),
            steps=Counter("agentdeck_steps", "Steps finished, by type (action, planning, final).", ["type"],
                          registry=registry),
            errors=Counter("agentdeck_step_errors", "Errors shown in steps, by kind (ExecutionError, "
                           "ParsingError, RejectedByUser...).", ["kind"], registry=registry),
            tokens=Counter("agentdeck_model_tokens", "Model tokens, by direction (input, output).", ["direction"],
                           registry=registry),
            model_seconds=Histogram("agentdeck_model_call_seconds", "Time of each model call (a step's reply).",
                                    buckets=_SECONDS, registry=registry),
            tool_calls=Counter("agentdeck_tool_calls", "Tool calls, by tool and outcome (ok, error, rejected).",
                               ["tool", "outcome"], registry=registry),
            sandbox_runs=Counter("agentdeck_sandbox_runs", "Code runs in a sandbox, by backend and outcome (ok, "
                                 "error, state_lost, untrusted).", ["backend", "outcome"], registry=registry),
            sandbox_seconds=Histogram("agentdeck_sandbox_run_seconds", "Time of each code run in a sandbox.",
                                      buckets=_SECONDS, registry=registry),
            decisions=Counter("agentdeck_decisions", "A person's decisions, by kind and outcome.",
                              ["kind", "outcome"], registry=registry),
        )

    def _bounded(self, label: str, value: str) -> str:
        """`value` as a label value: one seen before, or a new short name while there is room; else "other"."""
        seen = self._seen.setdefault(label, set())
        if value in seen:
            return value
        name = value.replace("-", "_").replace(".", "_")
        if not (name.isidentifier() and len(value) <= 64) or len(seen) >= _MAX_LABEL_VALUES:
            return "other"
        seen.add(value)
        return value

    def start_run(self, agent: Any) -> EventMetrics:
        return self  # no per-run state: every event is counted as it comes

    def __call__(self, event: ev.Event) -> None:
        m = self._m
        if isinstance(event, ev.StepFinished):
            m.steps.labels(event.step_type).inc()
        elif isinstance(event, ev.ModelOutput):
            m.tokens.labels("input").inc(event.token_usage.input_tokens)
            m.tokens.labels("output").inc(event.token_usage.output_tokens)
            m.model_seconds.observe(event.duration_s)
        elif isinstance(event, ev.ToolCallResult):
            m.tool_calls.labels(self._bounded("tool", event.tool_name), "rejected" if event.rejected else
                                "error" if event.is_error else "ok").inc()
        elif isinstance(event, ev.SandboxRun):
            outcome = ("untrusted" if event.untrusted else "state_lost" if event.state_lost else
                       "error" if event.error_type else "ok")
            m.sandbox_runs.labels(self._bounded("backend", event.backend), outcome).inc()
            m.sandbox_seconds.observe(event.duration_s)
        elif isinstance(event, ev.StepError):
            m.errors.labels(self._bounded("kind", event.error_type)).inc()
        elif isinstance(event, ev.DecisionMade):
            m.decisions.labels(event.request_kind, event.outcome).inc()
        elif isinstance(event, ev.RunFinished) and event.parent_id is None:
            m.runs.labels(event.state).inc()
