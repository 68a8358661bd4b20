"""The event-fed Prometheus counters: what a run can choose stays bounded."""
from __future__ import annotations

from prometheus_client import CollectorRegistry

from agents import events as ev
from agents.telemetry.metrics import EventMetrics


def test_metrics_labels_a_run_can_choose_stay_bounded():
    """A model (steered by a visitor) calling made-up tools must not grow the metrics without end."""
    registry = CollectorRegistry()
    metrics = EventMetrics(registry)
    for i in range(1000):
        metrics(ev.ToolCallResult(run_id="r", step=1, call_id=str(i), tool_name=f"made_up_{i}", output="",
                                  is_error=True))
        metrics(ev.StepError(run_id="r", step=1, error_type=f"Kind{i}" if i % 2 else "x" * 500, message=""))
    tools = {s.labels["tool"] for m in registry.collect() if m.name == "agentdeck_tool_calls" for s in m.samples
             if s.name.endswith("_total")}
    kinds = {s.labels["kind"] for m in registry.collect() if m.name == "agentdeck_step_errors" for s in m.samples
             if s.name.endswith("_total")}
    assert len(tools) == 65 and "other" in tools
    assert len(kinds) <= 65 and "other" in kinds
    total = sum(s.value for m in registry.collect() if m.name == "agentdeck_tool_calls" for s in m.samples
                if s.name.endswith("_total"))
    assert total == 1000  # every call still counted
