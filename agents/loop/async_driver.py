"""Driving a run's step loop from an event loop: the model calls awaited there, the work between them in a thread.

Why: a run spends most of its time waiting for its provider, and `arun`/`astream` should serve many runs from one
event loop without a thread each. The step loop is the same generator `run` drives (agents/loop/model_call.py);
here each stretch of blocking work between two model calls (preparing the prompt, running code in the sandbox,
calling tools, waiting for a decision) runs in a shared, bounded pool of threads only for its duration, and each
model call that can be awaited (agents/models/async_remote.py) is awaited in the loop: a run waiting for its
provider holds no thread. A model that cannot be awaited (a local one, a scripted one) is read in a pool thread,
as `run` reads it.

Stop: the run's stop flag is looked at every tenth of a second while the call is awaited (as the thread path
does); the call's task is then cancelled and the step loop is told where it was, so it records the stop as `run`
does. Cancelling the driving task stops the run the same way and returns once it has ended.
"""
from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from agents.errors import AgentInterrupted
from agents.loop.model_call import ModelCall, Steps
from agents.loop.model_reader import POLL_S
from agents.models.base import ModelDelta

T = TypeVar("T")

#: At most this many runs do blocking work (code, tools, a wait for a decision) at the same moment; the others'
#: next stretch waits its turn. Runs waiting for their provider use none.
STEP_THREADS = 32

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def step_pool() -> ThreadPoolExecutor:
    """The threads async runs do their blocking work in (made on first use; its threads start as needed)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=STEP_THREADS, thread_name_prefix="agent-step")
        return _pool


@dataclass
class _Done(Generic[T]):
    value: T


def _advance(steps: Steps[T], error: BaseException | None) -> ModelCall | _Done[T]:
    """Run the step loop up to its next model call (telling it `error`, the last call's, first)."""
    try:
        return steps.throw(error) if error is not None else steps.send(None)
    except StopIteration as end:
        return _Done(end.value)


class _Driver(Generic[T]):
    def __init__(self, steps: Steps[T], stop_flag: threading.Event, interrupt: Callable[[], None]) -> None:
        self.steps = steps
        self.stop_flag = stop_flag
        self.interrupt = interrupt
        self.cancelled = False
        # The step loop always runs in this context, whichever pool thread runs it (one stretch at a time).
        self.context = contextvars.copy_context()

    def _on_cancel(self) -> None:
        self.cancelled = True
        self.interrupt()

    async def _stretch(self, error: BaseException | None) -> ModelCall | _Done[T]:
        future: Future[ModelCall | _Done[T]] = step_pool().submit(self.context.run, _advance, self.steps, error)
        outcome: ModelCall | _Done[T] = await self._settle(future)
        return outcome

    async def _settle(self, future: Future[Any]) -> Any:
        """The pool's result. A cancelled driver cannot take the step loop back from a thread mid-stretch: it
        tells the run to stop and waits for the stretch to end (Stop ends code and decisions at once)."""
        while True:
            try:
                return await asyncio.shield(asyncio.wrap_future(future))
            except asyncio.CancelledError:
                if future.done():
                    return future.result()
                self._on_cancel()

    async def _await_call(self, call: ModelCall) -> None:
        """Wait for the call's whole reply; AgentInterrupted within a tenth of a second of Stop."""
        if call.make_astream is None:  # read in a pool thread, with its reader thread, as `run` reads it
            await self._settle(step_pool().submit(self.context.run, call.serve))
            return
        reading = asyncio.ensure_future(_read(call.make_astream(), call, self.stop_flag))
        try:
            while not reading.done():
                try:
                    await asyncio.wait({reading}, timeout=POLL_S)
                except asyncio.CancelledError:
                    self._on_cancel()
                if self.stop_flag.is_set() and not reading.done():
                    raise AgentInterrupted("The run was stopped while the model was answering.")
            reading.result()
        finally:
            if not reading.done():
                reading.cancel()
                await asyncio.gather(reading, return_exceptions=True)

    async def run(self) -> T:
        outcome = await self._stretch(None)
        while isinstance(outcome, ModelCall):
            error: BaseException | None = None
            try:
                await self._await_call(outcome)
            except asyncio.CancelledError:  # the call's own task was cancelled: the run is stopped
                self._on_cancel()
                error = AgentInterrupted("The run was stopped while the model was answering.")
            except BaseException as exc:  # the call's error is raised where it was made
                error = exc
            outcome = await self._stretch(error)
        if self.cancelled:
            raise asyncio.CancelledError
        return outcome.value


async def _read(deltas: AsyncIterator[ModelDelta], call: ModelCall, stop_flag: threading.Event) -> None:
    async for delta in deltas:
        if stop_flag.is_set():  # as the thread path: no delta is taken after Stop
            raise AgentInterrupted("The run was stopped while the model was answering.")
        call.take(delta)


async def drive_async(steps: Steps[T], stop_flag: threading.Event, interrupt: Callable[[], None]) -> T:
    """Run `steps` to its end from the running event loop (see the module's docstring). `stop_flag`: the run's
    stop flag; `interrupt`: how to stop the run (the agent's `interrupt`), called when this task is cancelled."""
    return await _Driver(steps, stop_flag, interrupt).run()
