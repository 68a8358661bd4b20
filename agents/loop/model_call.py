"""Where a run waits for its model: the step loop yields a ModelCall, and whoever drives the loop serves it.

Why: a run spends most of its time waiting for the provider. The step loop (agents/loop/step_runner.py) is one
generator for both paths: it yields each model call and carries on with the reply. `drive` (run, run(stream=True))
serves the call in the run's own thread, reading the reply in a helper thread so Stop is never stuck behind a
stalled provider (agents/loop/model_reader.py). `arun`/`astream` (agents/loop/async_driver.py) await the call in
the event loop instead and run only the blocking work between calls (code, tools, decisions) in a thread, so a
run that waits for its provider holds no thread at all.

The ModelCall turns the deltas into the run's events (`take`) and assembles the reply, whichever side reads them.
"""
from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from agents.events import ModelRetrying, ModelTextDelta
from agents.loop.async_reader import AsyncModelReader
from agents.loop.model_reader import ModelStreamReader
from agents.models.base import ModelDelta, ModelReply

if TYPE_CHECKING:
    from agents.loop.context import RunContext

T = TypeVar("T")

#: The step loop of a run, or a part of it: yields the model calls it waits for, returns its value.
Steps = Generator["ModelCall", None, T]


@dataclass
class ModelCall:
    """One model call a run waits for. `make_stream` gives its deltas in a thread; `make_astream`, when the
    model can be awaited (agents/models/async_remote.py), in an event loop."""

    run: RunContext
    make_stream: Callable[[], Iterator[ModelDelta]]
    make_astream: Callable[[], AsyncIterator[ModelDelta]] | None
    thread_name: str
    started: float = field(default_factory=time.perf_counter)
    pieces: list[str] = field(default_factory=list)
    final: ModelReply | None = None

    def take(self, delta: ModelDelta) -> None:
        """One delta of the reply: a retry notice or a piece of text becomes the run's event."""
        run = self.run
        if delta.retry is not None:
            notice = delta.retry
            if notice.discarded_text:
                self.pieces.clear()  # the call starts again from scratch
            run.emit(ModelRetrying(**run.event_fields(), reason=notice.reason, attempt=notice.attempt,
                                   max_retries=notice.max_retries, wait_s=notice.wait_s,
                                   retry_after_s=notice.retry_after_s, discarded_text=notice.discarded_text))
        if delta.content:
            self.pieces.append(delta.content)
            run.emit(ModelTextDelta(**run.event_fields(), text=delta.content))
        if delta.reply is not None:
            self.final = delta.reply

    def reply(self) -> tuple[ModelReply, float]:
        """The assembled reply (the streamed text when the model sent no final reply) and the call's duration."""
        reply = self.final if self.final is not None else ModelReply(content="".join(self.pieces))
        return reply, time.perf_counter() - self.started

    def serve(self) -> None:
        """Wait for the whole reply in this thread; raises AgentInterrupted within a tenth of a second of Stop.
        A managed agent's run inside an `arun` has its manager's event loop: its call is awaited there."""
        run = self.run
        reader: ModelStreamReader | AsyncModelReader
        if run.event_loop is not None and self.make_astream is not None:
            reader = AsyncModelReader(self.make_astream, run.event_loop)
        else:
            reader = ModelStreamReader(self.make_stream, name=self.thread_name)
        try:
            for delta in reader.deltas(run.interrupt_flag.is_set):
                self.take(delta)
        finally:
            reader.close()


def drive(steps: Steps[T]) -> T:
    """Run `steps` to its end in this thread, serving each model call here (`run`, `run(stream=True)`).
    A call's error (Stop included) is raised inside the step loop, where the call was made."""
    try:
        call = next(steps)
        while True:
            try:
                call.serve()
            except BaseException as exc:
                call = steps.throw(exc)
            else:
                call = steps.send(None)
    except StopIteration as end:
        value: T = end.value
        return value
