"""`await agent.arun(task)` and `async for event in agent.astream(task)`: the same run, events and results as
`run(stream=True)`, for programs that live in an event loop.

The design: the step loop is the one `run` uses, a generator that yields each model call it waits for
(agents/loop/model_call.py). Here it is driven by a task in the caller's loop (agents/loop/async_driver.py): a
model that can be awaited (a hosted model through litellm's `acompletion` or Hugging Face's async client,
agents/models/async_remote.py) is awaited in the loop, and the blocking work between two calls (code in the
sandbox, tools, a wait for a decision) runs in a shared, bounded pool of threads only while it lasts. A run
waiting for its provider holds no thread. Other models are read in a pool thread, as `run` reads them.
Events reach the loop with `call_soon_threadsafe`: no reader thread either.

Stop: `agent.interrupt()`, or cancelling the task that iterates `astream` (or awaits `arun`): the run is told to
stop, and the cancellation returns once the run has ended and recorded how (its RunFinished is `interrupted`).
A decision comes as a DecisionRequested event. By default the run waits for it in its pool thread: answer it
with `agent.resolve_decision(...)` and read on. An agent made with `pause_on_decision=True` ends the run there
instead (RunFinished `paused`, the request in `agent.memory.pending`, agents/decisions/pending.py), holding no
thread while the person decides: `aresume(agent, decision)` / `astream_resume(agent, decision)` go on from there,
here or in another process on the loaded memory.
"""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from agents.decisions import Decision
from agents.decisions.pending import PendingDecision
from agents.errors import ConfigurationError
from agents.events import Event
from agents.loop.async_driver import drive_async
from agents.loop.model_call import Steps
from agents.loop.result import RunResult, RunState
from agents.loop.run_options import RunOptions
from agents.models.images import ImageData

#: How long a cancelled `astream` waits for its run to end after telling it to stop (Stop takes effect within
#: a fraction of a second; a sandbox stuck in the kernel is killed within its own limits).
STOP_WAIT_S = 30.0


class _End:
    pass


class _Failure:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def astream(agent: Any, task: str, reset: bool = True, history: list[Any] | None = None,
            additional_args: dict[str, Any] | None = None, images: list[Any] | None = None,
            options: RunOptions | None = None) -> AsyncIterator[Event]:
    """The run's events as they come (see the module's docstring). `images` are checked here, before the run
    starts, as `run` checks them: a model that reads no images refuses them with ImageRefusedError at once.
    `options`: this run's own settings (agents/loop/run_options.py)."""
    checked = agent.check_images(images, fresh=reset)
    return _events(agent, task, reset, history, additional_args, checked, [], options)


def astream_resume(agent: Any, decision: Decision) -> AsyncIterator[Event]:
    """`agent.resume(decision, stream=True)` in an event loop: the run that ended at `agent.memory.pending`
    (pause mode) goes on with the person's `decision`. ConfigurationError at once when nothing waits or the
    decision does not fit the request."""
    pending = _take_pending(agent, decision)
    return _drive(agent, lambda send: agent._resume_steps(pending, decision, send), [])


async def aresume(agent: Any, decision: Decision, return_result: bool = False) -> Any:
    """`agent.resume(decision)` in an event loop: returns as `arun` does (the run may pause again)."""
    pending = _take_pending(agent, decision)
    results: list[RunResult] = []
    async for _ in _drive(agent, lambda send: agent._resume_steps(pending, decision, send), results):
        pass
    return _returned(results[0], return_result)


def _take_pending(agent: Any, decision: Decision) -> PendingDecision:
    """The paused run's record, taken from the memory once the decision is known to fit it (as `resume`)."""
    pending: PendingDecision | None = agent.memory.pending
    if pending is None:
        raise ConfigurationError("No run of this agent is waiting for a decision: there is nothing to resume.")
    decision.validate_for(pending.request())
    agent.memory.pending = None
    return pending


def _events(agent: Any, task: str, reset: bool, history: list[Any] | None,
            additional_args: dict[str, Any] | None, images: list[ImageData],
            results: list[RunResult], options: RunOptions | None = None) -> AsyncIterator[Event]:
    """`astream`, keeping the run's RunResult in `results` (for `arun`)."""
    return _drive(agent, lambda send: agent._run_steps(task, emit=send, reset=reset, history=history,
                                                       additional_args=additional_args,
                                                       event_loop=asyncio.get_running_loop(), images=images,
                                                       options=options), results)


async def _drive(agent: Any, make_steps: Callable[[Callable[[Any], None]], Steps[RunResult]],
                 results: list[RunResult]) -> AsyncIterator[Event]:
    """The events of the step loop `make_steps(emit)` makes, driven from this event loop; its RunResult goes in
    `results`."""
    loop = asyncio.get_running_loop()
    items: asyncio.Queue[Event | _End | _Failure] = asyncio.Queue()

    def send(item: Event | _End | _Failure) -> None:
        try:
            loop.call_soon_threadsafe(items.put_nowait, item)
        except RuntimeError:  # the loop is closed: nobody is reading any more
            agent.interrupt()

    async def body() -> None:
        try:
            results.append(await drive_async(make_steps(send), agent._interrupt_flag, agent.interrupt))
        except BaseException as exc:  # a bug in the loop itself (or the loop's shutdown): tell the consumer
            send(_Failure(exc))
        finally:
            send(_End())

    driver = asyncio.ensure_future(body())  # a task of its own: the consumer's cancellation does not cancel it
    finished = False
    try:
        while True:
            item = await items.get()
            if isinstance(item, _End):
                finished = True
                return
            if isinstance(item, _Failure):
                finished = True
                raise item.exc
            yield item
    finally:
        if not finished:  # cancelled, or the consumer stopped reading: stop the run and let it record its end
            agent.interrupt()
            try:
                await asyncio.wait({driver}, timeout=STOP_WAIT_S)  # never cancels the driver itself
            except asyncio.CancelledError:
                pass


async def arun(agent: Any, task: str, reset: bool = True, return_result: bool = False,
               history: list[Any] | None = None, additional_args: dict[str, Any] | None = None,
               images: list[Any] | None = None, options: RunOptions | None = None) -> Any:
    """Like `agent.run(task)`: the final answer (a RunResult with `return_result=True`); a failed run raises its
    error unless `return_result`. `images` as for `run` (refused before the run by a model that reads none)."""
    checked = agent.check_images(images, fresh=reset)
    results: list[RunResult] = []
    async for _ in _events(agent, task, reset, history, additional_args, checked, results, options):
        pass
    return _returned(results[0], return_result)


def _returned(result: RunResult, return_result: bool) -> Any:
    """What `arun` (and `aresume`) return for `result`, as `run` does."""
    if return_result:
        return result
    if result.state is RunState.ERROR and result.exception is not None:
        raise result.exception
    return result.output
