"""A whole agent run against a misbehaving loopback provider: Stop while the stream is stalled or while
waiting out a Retry-After ends the run at once and keeps the conversation; a stream cut part-way is
retried and the run succeeds."""
from __future__ import annotations

import threading
import time

from agents import ToolCallingAgent
from agents import events as ev
from agents.models import load_model
from agents.models.retry import RetryPolicy
from tests.waiting import wait_until

SECRET = "sk-test-secret-0123456789"
THINKING = "Let me think about this question for a little while before answering it."
# The fake server streams 5-character pieces and stalls at the middle one: what arrives before the stall.
BEFORE_STALL = THINKING[: 5 * (len(range(0, len(THINKING), 5)) // 2)]


def final(answer: str) -> dict:
    return {"type": "reply", "content": "", "tool_calls": [{"name": "final_answer", "arguments": {"answer": answer}}]}


def make_agent(server) -> ToolCallingAgent:
    model = load_model("openai/gpt-4.1-mini", api_base=server.url, api_key=SECRET,
                       retry=RetryPolicy(max_retries=2, initial_delay=0.05, max_delay=0.1))
    return ToolCallingAgent(model=model, verbosity=0, max_steps=3)


def model_threads(agent: ToolCallingAgent) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"model-{type(agent).__name__}" and t.is_alive()]


def stop_when(agent: ToolCallingAgent, task: str, trigger) -> tuple[list[ev.Event], float]:
    """Run `task` streamed; once `trigger(event)` or the server stalls, interrupt and time the run's end."""
    events: list[ev.Event] = []
    stream = agent.run(task, stream=True, reset=False)
    stopped_at = None
    while True:
        event = stream.get(timeout=0.05)
        if event is not None:
            events.append(event)
            if isinstance(event, ev.RunFinished):
                break
        if stopped_at is None and trigger(event):
            stopped_at = time.monotonic()
            agent.interrupt()
    assert stopped_at is not None, "the fault never happened"
    return events, time.monotonic() - stopped_at


def test_stop_during_a_stalled_stream_ends_the_run_at_once_and_keeps_memory(server):
    agent = make_agent(server)
    server.script = [final("first answer")]
    assert agent.run("What is the first thing?", reset=False) == "first answer"
    server.script = [{"type": "stall_mid", "content": THINKING, "stall_s": 60}]
    received: list[str] = []

    def stalled(event) -> bool:  # every piece sent before the stall has reached the run: it is blocked now
        if isinstance(event, ev.ModelTextDelta):
            received.append(event.text)
        return server.stalled.is_set() and "".join(received) == BEFORE_STALL

    events, elapsed = stop_when(agent, "And the second?", stalled)
    assert elapsed < 3.0, f"Stop took {elapsed:.1f} s while the provider stalled"
    assert events[-1].state == "interrupted"
    assert len(server.requests) == 2  # no retry after Stop
    wait_until(lambda: not model_threads(agent), 5.0, "the model reader thread to end after the stop")
    # The conversation goes on from where it was: both earlier tasks are in the next prompt.
    server.script = [final("third answer")]
    assert agent.run("And the third?", reset=False) == "third answer"
    sent = " ".join(str(m.get("content")) for m in server.requests[-1]["messages"])
    assert "What is the first thing?" in sent and "first answer" in sent and "And the second?" in sent
    agent.close()


def test_stop_during_a_retry_after_wait_ends_the_run_at_once(server):
    agent = make_agent(server)
    server.script = [{"type": "error", "status": 429, "message": "slow down", "retry_after": 30}, final("never")]
    events, elapsed = stop_when(agent, "Anything?", lambda event: isinstance(event, ev.ModelRetrying))
    assert elapsed < 3.0, f"Stop took {elapsed:.1f} s during a Retry-After wait"
    retry = next(e for e in events if isinstance(e, ev.ModelRetrying))
    assert (retry.wait_s, retry.retry_after_s, retry.attempt) == (30.0, 30.0, 1) and "rate limited" in retry.reason
    assert events[-1].state == "interrupted"
    wait_until(lambda: not model_threads(agent), 5.0, "the model reader thread to end")
    assert len(server.requests) == 1  # the wait was abandoned, not followed by a request
    assert agent.memory.steps and agent.memory.steps[-1].error  # the step ends as interrupted, kept in memory
    agent.close()


def test_stream_cut_part_way_is_retried_and_the_run_succeeds_with_memory(server):
    agent = make_agent(server)
    server.script = [final("one")]
    assert agent.run("First question", reset=False) == "one"
    server.script = [{"type": "drop_mid", "content": THINKING}, final("two")]
    events: list[ev.Event] = []
    stream = agent.run("Second question", stream=True, reset=False)
    events.extend(stream)
    assert events[-1].state == "success" and events[-1].output == "two"
    retries = [e for e in events if isinstance(e, ev.ModelRetrying)]
    assert len(retries) == 1 and retries[0].discarded_text and retries[0].reason == "the connection dropped"
    # The discarded partial text is not in the step's output, and the retried call sent the same prompt.
    outputs = [e.text for e in events if isinstance(e, ev.ModelOutput)]
    assert outputs and not any("Let me think" in text for text in outputs)
    assert server.requests[-1]["messages"] == server.requests[-2]["messages"]
    sent = " ".join(str(m.get("content")) for m in server.requests[-1]["messages"])
    assert "First question" in sent and "Second question" in sent
    agent.close()
