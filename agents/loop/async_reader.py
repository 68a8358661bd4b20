"""A model call awaited in an event loop, read by the step loop's thread as ModelStreamReader reads its thread's.

Why: with `astream`/`arun` (agents/loop/async_api.py) the model call, where a run spends most of its time, runs as
a task in the caller's event loop: no thread of its own and no blocked socket per agent while the provider thinks.
The step loop stays in its thread (code runs in the sandbox, tools are plain functions) and waits on the queue a
tenth of a second at a time, so Stop works as before; closing the reader cancels the task.
"""
from __future__ import annotations

import asyncio
import queue
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Future

from agents.loop.model_reader import _END, POLL_S, _Failure, _Item, read_deltas
from agents.models.base import ModelDelta


async def _apump(make_stream: Callable[[], AsyncIterator[ModelDelta]], out: queue.SimpleQueue[_Item]) -> None:
    try:
        async for delta in make_stream():
            out.put(delta)
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        out.put(_Failure(exc))
    finally:
        out.put(_END)


class AsyncModelReader:
    """One model call as a task in `loop`. Iterate `deltas(should_stop)`; always `close()` after."""

    def __init__(self, make_stream: Callable[[], AsyncIterator[ModelDelta]], loop: asyncio.AbstractEventLoop) -> None:
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._future: Future[None] = asyncio.run_coroutine_threadsafe(_apump(make_stream, self._queue), loop)

    def deltas(self, should_stop: Callable[[], bool], poll_s: float = POLL_S) -> Iterator[ModelDelta]:
        return read_deltas(self._queue, should_stop, poll_s)

    def close(self) -> None:
        """Cancel the call's task if it is still going (idempotent)."""
        self._future.cancel()
