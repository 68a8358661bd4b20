"""`await agent.arun(task)` and `async for event in agent.astream(task)`: the same run, events and results as
`run(stream=True)`, for programs that live in an event loop.

The design, honestly: the step loop stays synchronous in a thread of its own per run (code runs in the sandbox
worker, tools are plain functions, decisions wait on a person), as `run(stream=True)` does. What moves into the
event loop is the wait for the provider: a model that can be awaited (a hosted model through litellm's
`acompletion`, agents/models/async_remote.py) streams its reply as a task in the caller's loop, so a run costs one
thread instead of two and no thread sits in a socket read; other models are read in their own thread as before.
Events reach the loop with `call_soon_threadsafe`: no reader thread either.

Stop: `agent.interrupt()`, or cancelling the task that iterates `astream` (or awaits `arun`): the run is told to
stop, and the cancellation returns once the run has ended and recorded how (its RunFinished is `interrupted`).
A paused decision comes as a DecisionRequested event; answer it with `agent.resolve_decision(...)` and read on.
"""
from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

from agents.events import Event
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


async def _events(agent: Any, task: str, reset: bool, history: list[Any] | None,
                  additional_args: dict[str, Any] | None, images: list[ImageData],
                  results: list[RunResult], options: RunOptions | None = None) -> AsyncIterator[Event]:
    """`astream`, keeping the run's RunResult in `results` (for `arun`)."""
    loop = asyncio.get_running_loop()
    items: asyncio.Queue[Event | _End | _Failure] = asyncio.Queue()
    ended = asyncio.Event()

    def deliver(item: Event | _End | _Failure) -> None:
        items.put_nowait(item)
        if isinstance(item, (_End, _Failure)):
            ended.set()

    def send(item: Event | _End | _Failure) -> None:
        try:
            loop.call_soon_threadsafe(deliver, item)
        except RuntimeError:  # the loop is closed: nobody is reading any more
            agent.interrupt()

    def body() -> None:
        try:
            results.append(agent._execute(task, emit=send, reset=reset, history=history,
                                          additional_args=additional_args, event_loop=loop, images=images,
                                          options=options))
        except BaseException as exc:  # a bug in the loop itself: surface it to the consumer
            send(_Failure(exc))
        finally:
            send(_End())

    thread = threading.Thread(target=body, name=f"agent-arun-{agent.name or type(agent).__name__}", daemon=True)
    thread.start()
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
                await asyncio.wait_for(asyncio.shield(ended.wait()), STOP_WAIT_S)
            except (TimeoutError, asyncio.CancelledError):
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
    result = results[0]
    if return_result:
        return result
    if result.state is RunState.ERROR and result.exception is not None:
        raise result.exception
    return result.output
