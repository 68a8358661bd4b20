"""`arun`/`astream` with a hosted model on a loopback OpenAI-compatible server: the reply is awaited in the
event loop (litellm's acompletion), no model thread is started, a retry and Stop during a stalled stream work."""
from __future__ import annotations

import asyncio
import threading
import time

from agents import ToolCallingAgent
from agents import events as ev
from agents.models import load_model
from agents.models.retry import RetryPolicy

SECRET = "sk-test-secret-0123456789"
THINKING = "Let me think about this question for a little while before answering it."


def final(answer: str) -> dict:
    return {"type": "reply", "content": "", "tool_calls": [{"name": "final_answer", "arguments": {"answer": answer}}]}


def make_agent(server) -> ToolCallingAgent:
    model = load_model("openai/gpt-4.1-mini", api_base=server.url, api_key=SECRET,
                       retry=RetryPolicy(max_retries=2, initial_delay=0.05, max_delay=0.1))
    return ToolCallingAgent(model=model, verbosity=0, max_steps=3)


def test_arun_awaits_the_provider_in_the_loop_without_a_model_thread(server):
    agent = make_agent(server)
    server.script = [{"type": "reply", "content": THINKING, "usage": (50, 12)}, final("done")]
    model_threads: list[str] = []

    async def main():
        events = []
        async for event in agent.astream("Think, then answer."):
            events.append(event)
            model_threads.extend(t.name for t in threading.enumerate() if t.name.startswith("model-"))
        return events

    events = asyncio.run(main())
    assert events[-1].state == "success" and events[-1].output == "done"
    assert "".join(e.text for e in events if isinstance(e, ev.ModelTextDelta) and e.step == 1) == THINKING
    first = next(e for e in events if isinstance(e, ev.ModelOutput))
    assert (first.token_usage.input_tokens, first.token_usage.output_tokens) == (50, 12)
    assert model_threads == []  # the sync path reads each reply in a "model-..." thread


def test_a_transient_error_is_retried_and_shown(server):
    agent = make_agent(server)
    server.script = [{"type": "error", "status": 503, "message": "busy"}, final("after retry")]
    events = asyncio.run(_collect(agent, "Try."))
    assert any(isinstance(e, ev.ModelRetrying) for e in events)
    assert events[-1].state == "success" and events[-1].output == "after retry"


async def _collect(agent, task):
    return [event async for event in agent.astream(task)]


def test_stop_while_the_provider_stalls_ends_the_run_at_once(server):
    agent = make_agent(server)
    server.script = [{"type": "stall_mid", "content": THINKING, "stall_s": 60}]

    async def main():
        stopped_at: list[float] = []

        async def stop_once_stalled():
            assert await asyncio.to_thread(server.stalled.wait, 30), "the server never stalled"
            stopped_at.append(time.monotonic())
            agent.interrupt()

        watcher = asyncio.create_task(stop_once_stalled())
        events = [event async for event in agent.astream("Stall.")]
        await watcher
        return events, time.monotonic() - stopped_at[0]

    events, elapsed = asyncio.run(main())
    assert elapsed < 3.0, f"Stop took {elapsed:.1f} s while the provider stalled"
    assert events[-1].state == "interrupted"
    assert len(server.requests) == 1  # no retry after Stop


def test_hugging_face_inference_is_awaited_too(server, monkeypatch):
    import huggingface_hub.constants

    # The test session sets HF_HUB_OFFLINE=1; huggingface_hub may talk to the loopback server only.
    monkeypatch.setattr(huggingface_hub.constants, "is_offline_mode", lambda: False)
    model = load_model("hf:Qwen/Qwen2.5-Coder-32B-Instruct", base_url=server.url, token="hf_test_token_0123456789",
                       retry=RetryPolicy(max_retries=1, initial_delay=0.05, max_delay=0.1))
    agent = ToolCallingAgent(model=model, verbosity=0, max_steps=3)
    server.script = [{"type": "reply", "content": THINKING, "usage": (40, 9)}, final("hf done")]
    events = asyncio.run(_collect(agent, "Think, then answer."))
    assert events[-1].state == "success" and events[-1].output == "hf done", events[-1].error
    assert "".join(e.text for e in events if isinstance(e, ev.ModelTextDelta) and e.step == 1) == THINKING
    first = next(e for e in events if isinstance(e, ev.ModelOutput))
    assert (first.token_usage.input_tokens, first.token_usage.output_tokens) == (40, 9)


def test_runs_waiting_for_the_provider_hold_no_thread(server, monkeypatch):
    """Six runs wait for a stalled provider at once while the pool for the work between model calls has one
    thread: a run that held a thread while it waited would keep the others from sending their requests."""
    from concurrent.futures import ThreadPoolExecutor

    import agents.loop.async_driver as async_driver
    from tests.waiting import wait_until_async

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agent-step")
    monkeypatch.setattr(async_driver, "_pool", pool)
    team = [make_agent(server) for _ in range(6)]
    server.script = [{"type": "stall_mid", "content": THINKING, "stall_s": 60} for _ in team]

    async def main():
        runs = [asyncio.create_task(agent.arun("Stall.", return_result=True)) for agent in team]

        async def all_waiting():
            return len(server.requests) == len(team)

        await wait_until_async(all_waiting, what="every run's request at the provider")
        waiting_threads = [t.name for t in threading.enumerate() if t.name.startswith(("model-", "agent-arun"))]
        free = await asyncio.wrap_future(pool.submit(lambda: "the pool's thread is free"))
        for agent in team:
            agent.interrupt()
        results = await asyncio.wait_for(asyncio.gather(*runs), 30)
        return waiting_threads, free, results

    try:
        waiting_threads, free, results = asyncio.run(main())
    finally:
        server.release()
        pool.shutdown()
    assert waiting_threads == [] and free == "the pool's thread is free"
    assert [r.state.value for r in results] == ["interrupted"] * len(team)
    assert len(server.requests) == len(team)  # no retry after Stop


def test_cancelling_astream_while_the_provider_stalls_records_the_stop(server):
    from agents.memory import TaskStep

    agent = make_agent(server)
    server.script = [{"type": "stall_mid", "content": THINKING, "stall_s": 60}]

    async def main():
        seen: list[ev.Event] = []

        async def consume():
            async for event in agent.astream("Stall."):
                seen.append(event)

        task = asyncio.create_task(consume())
        assert await asyncio.to_thread(server.stalled.wait, 30), "the server never stalled"
        started = time.monotonic()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return seen, time.monotonic() - started
        raise AssertionError("the cancelled task ended without CancelledError")

    try:
        seen, elapsed = asyncio.run(main())
    finally:
        server.release()
    assert elapsed < 3.0, f"the cancellation took {elapsed:.1f} s while the provider stalled"
    assert isinstance(seen[0], ev.RunStarted) and not any(isinstance(e, ev.RunFinished) for e in seen)
    task_step = next(s for s in agent.memory.steps if isinstance(s, TaskStep))
    assert task_step.state == "interrupted"  # recorded by the time the cancellation returned


def test_a_provider_error_ends_the_async_run_as_it_ends_a_run(server):
    agent = make_agent(server)
    server.script = [{"type": "error", "status": 401, "message": "bad key"}]
    sync = agent.run("Try.", return_result=True)
    server.script = [{"type": "error", "status": 401, "message": "bad key"}]
    result = asyncio.run(agent.arun("Try.", return_result=True))
    assert result.state.value == sync.state.value == "error"
    assert type(result.exception) is type(sync.exception) and result.error == sync.error
