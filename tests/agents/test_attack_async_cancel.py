"""Attacks on the async driver (agents/loop/async_driver.py): a cancelled run must not leave its code running,
nor a thread of the shared step pool busy, behind it."""
from __future__ import annotations

import asyncio
import time

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
