"""EventStream: a run's events read by iteration or with a timeout, the loop's own crash, an abandoned stream."""
from __future__ import annotations

import gc
import threading

import pytest

from agents import events as ev
from agents.loop.event_stream import EventStream
from tests.agents.conftest import call, code
from tests.waiting import wait_until


def started(step: int) -> ev.StepStarted:
    return ev.StepStarted(run_id="r", step=step, step_type="action")


def test_get_waits_at_most_its_timeout_and_get_nowait_not_at_all() -> None:
    release = threading.Event()

    def body(emit):
        emit(started(1))
        release.wait(10)
        emit(started(2))

    stream = EventStream(body, on_abandon=lambda: None, thread_name="t")
    assert stream.get(timeout=5).step == 1
    assert stream.get(timeout=0.05) is None  # the loop is busy: nothing yet, and no hang
    assert stream.get_nowait() is None
    release.set()
    assert stream.get(timeout=5).step == 2
    with pytest.raises(StopIteration):
        stream.get(timeout=5)
    assert stream.ended
    with pytest.raises(StopIteration):
        stream.get_nowait()
    assert list(stream) == []


def test_a_crash_of_the_loop_itself_reaches_the_consumer() -> None:
    def body(emit):
        emit(started(1))
        raise RuntimeError("bug in the loop")

    stream = EventStream(body, on_abandon=lambda: None, thread_name="t")
    assert next(stream).step == 1
    with pytest.raises(RuntimeError, match="bug in the loop"):
        next(stream)
    assert stream.ended


def test_agent_stream_reads_with_a_timeout(make_tool_agent) -> None:
    agent, _ = make_tool_agent([call("final_answer", answer=42)])
    stream = agent.run("t", stream=True)
    events = []
    while True:
        try:
            event = stream.get(timeout=10)
        except StopIteration:
            break
        assert event is not None, "the run stalled"
        events.append(event)
    assert events[0].kind == "run_started" and events[-1].kind == "run_finished" and events[-1].output == 42


def test_a_dropped_stream_stops_its_run(make_code_agent) -> None:
    agent, _ = make_code_agent([code("import time\nprint('working', flush=True)\ntime.sleep(30)"),
                                code("final_answer(1)")], executor_timeout_s=60)
    stopped = threading.Event()
    original = agent.interrupt
    agent.interrupt = lambda: (stopped.set(), original())
    stream = agent.run("t", stream=True)
    for event in stream:
        if isinstance(event, ev.ExecutionLog):
            break  # the code is running: the consumer goes away
    del stream, event
    gc.collect()
    assert stopped.wait(5), "nobody reads the run any more: it must be told to stop"
    # ...and it stops: the step is recorded as stopped (and the agent is closed idle, not mid-interrupt).
    wait_until(lambda: len(agent.memory.steps) >= 2, what="the stopped step in the memory")
    assert agent.memory.steps[1].error == "The run was stopped by the user while the code was running."
