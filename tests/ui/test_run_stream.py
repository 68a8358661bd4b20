"""How a run's events become updates (ui/session/run_stream.py): bursts, their window, pauses."""
from __future__ import annotations

from pathlib import Path

from agents import events as ev
from agents.loop.event_stream import EventStream
from agents.models.base import TokenUsage
from ui.session.run_stream import burst_deadline
from ui.session.session import Session
from ui.settings import RunSettings


def test_the_window_counts_from_when_the_first_event_was_made() -> None:
    # An event made 15 ms ago (it waited while the previous update went out): 5 ms are left, not 20.
    assert burst_deadline(made=100.0, now=100.015, last_yield=0.0, gather=0.02, min_interval=0.05) == 100.02
    # Old news: shown at once.
    assert burst_deadline(made=99.0, now=100.0, last_yield=0.0, gather=0.02, min_interval=0.05) == 99.02
    # Never more than one update per min_interval, and never waiting longer than gather from now.
    assert burst_deadline(made=100.0, now=100.0, last_yield=99.99, gather=0.02, min_interval=0.05) == 100.02
    assert burst_deadline(made=100.0, now=100.0, last_yield=99.98, gather=0.02, min_interval=0.05) == 100.02
    assert burst_deadline(made=100.0, now=100.0, last_yield=99.995, gather=0.01, min_interval=0.05) == 100.01
    assert burst_deadline(made=None, now=100.0, last_yield=0.0, gather=0.02, min_interval=0.05) == 100.02


def session_with_run(tmp_path: Path, events: list[ev.Event]) -> Session:
    """A session whose run (started as the app starts one) emits `events`."""

    def body(emit):
        for event in events:
            emit(event)

    class Agent:
        def run(self, task: str, stream: bool, reset: bool) -> EventStream:
            return EventStream(body, on_abandon=lambda: None, thread_name="test-run")

    session = Session("k", tmp_path / "s", agent_factory=lambda settings, workspace: Agent(), max_upload_bytes=1000)
    assert session.start_run("go", [], RunSettings(model="replay:none"))
    return session


def step_message(session: Session) -> dict:
    return next(m for m in session.record.transcript.messages()
                if (m.get("metadata") or {}).get("title", "").startswith("Step 1"))


def fields(step: int) -> dict:
    return {"run_id": "r", "step": step}


def test_a_burst_is_one_update_and_a_pause_ends_the_drain(tmp_path: Path) -> None:
    burst = [ev.RunStarted(**fields(0), task="t", agent_name="a", model_id="m", max_steps=3),
             ev.StepStarted(**fields(1), step_type="action"),
             ev.CodeProposed(**fields(1), code="print(1)"),
             ev.DecisionRequested(**fields(1), request_id="d1", request_kind="code", payload={"code": "print(1)"}),
             # after the pause: the next drain
             ev.StepFinished(**fields(1), step_type="action", duration_s=0.1, token_usage=TokenUsage())]
    session = session_with_run(tmp_path, burst)
    updates = list(session.drain())
    assert updates == ["events"]
    assert session.run.waiting_decision is not None and not session.run.finished
    step = step_message(session)
    assert step["metadata"].get("status") != "done"  # StepFinished was not read yet (waiting: shown without status)
    assert list(session.drain()) == ["events"]  # the rest: StepFinished, then the end of the stream
    assert session.run.finished
    step = step_message(session)
    assert step["metadata"]["status"] == "done"
