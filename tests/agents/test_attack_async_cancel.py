"""Attacks on the async driver (agents/loop/async_driver.py): a cancelled run must not leave its code running,
nor a thread of the shared step pool busy, behind it."""
from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from agents import CodeAgent, ReplayModel
from agents import events as ev
from agents.loop.async_driver import step_pool
from tests.agents.conftest import code
from tests.waiting import wait_until

# Code that would run for ten minutes (its own timeout is longer than the test), printing as it goes.
SPIN = code("import time\nprint('started', flush=True)\nwhile True:\n    time.sleep(0.05)")


def test_cancelling_arun_while_its_code_runs_stops_the_code_and_frees_the_pool(tmp_path):
    """The task awaiting `arun` is cancelled while the run's code (in a pool thread) spins: the cancellation
    returns within seconds, the run is recorded as interrupted, and no pool thread stays busy with it."""
    async def main(agent):
        started = asyncio.Event()

        async def consume():
            async for event in agent.astream("Spin."):
                if isinstance(event, ev.ExecutionLog) and "started" in event.text:
                    started.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(started.wait(), 60)
        began = time.monotonic()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        return time.monotonic() - began

    with CodeAgent(tools=[], model=ReplayModel([SPIN, code("final_answer(1)")]), workdir=tmp_path, verbosity=0,
                   executor_timeout_s=600) as agent:
        took = asyncio.run(main(agent))
        assert took < 20, f"cancelling took {took:.1f}s"
        assert agent.memory.steps and any(getattr(s, "state", None) == "interrupted" for s in agent.memory.steps)
    pool = step_pool()
    wait_until(lambda: pool.submit(lambda: True).result(timeout=5), what="a pool thread to take new work")


@pytest.mark.xfail(strict=True, reason="found, not fixed: a run waiting for a person's decision holds a step-pool "
                   "thread for as long as nobody answers (README: async runs), so STEP_THREADS paused runs stall "
                   "every other async run of the process; making the decision wait awaitable is issue 30's work")
def test_a_run_waiting_for_a_decision_does_not_starve_other_runs(tmp_path, monkeypatch):
    """One visitor's run waits for an approval nobody gives; with the step pool at one thread (the same as 32
    paused runs on the real pool), another visitor's run must still finish."""
    import agents.loop.async_driver as async_driver

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agent-step")
    monkeypatch.setattr(async_driver, "_pool", pool)

    async def main(waiting, other):
        paused = asyncio.Event()

        async def consume():
            async for event in waiting.astream("Compute."):
                if isinstance(event, ev.DecisionRequested):
                    paused.set()

        first = asyncio.create_task(consume())
        await asyncio.wait_for(paused.wait(), 60)
        try:
            return await asyncio.wait_for(other.arun("Answer."), 20)
        except TimeoutError:
            return "starved"
        finally:
            waiting.interrupt()
            await asyncio.gather(first, return_exceptions=True)

    with CodeAgent(tools=[], model=ReplayModel([code("x = 1"), code("final_answer(x)")]), workdir=tmp_path / "a",
                   verbosity=0, approval_policy="approve_code") as waiting, \
            CodeAgent(tools=[], model=ReplayModel([code("final_answer(42)")]), workdir=tmp_path / "b",
                      verbosity=0) as other:
        try:
            assert asyncio.run(main(waiting, other)) == 42
        finally:
            pool.shutdown(wait=False)
