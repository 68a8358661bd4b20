"""A hosted model's reply streamed in an event loop: the async twin of `RemoteChatModel.generate_stream`.

Why: many agents in one event loop should not each hold a thread while they wait for the provider. An adapter
that can send a request with `await` (`_asend`: litellm's `acompletion`) gets `agenerate_stream` here; the same
assembly, stop sequences, usage, content-filter check and retries as the thread version, with the waits awaited.
Stop is the task's cancellation (agents/loop/async_reader.py cancels it).
"""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from agents.models.base import Message, ModelDelta, ModelReply
from agents.models.errors_mapping import classify_error
from agents.models.openai_format import StreamAssembler, check_content_filter, prepare_messages, usage_of
from agents.models.retry import _notice, _should_retry
from agents.models.streaming import StopFilter


async def _arequest(model: Any, messages: list[Message], stop_sequences: list[str] | None,
                    tools: list[dict[str, Any]] | None, kwargs: dict[str, Any]) -> Any:
    prepared = prepare_messages(messages, images=model.images)
    stop = model._stop_param(stop_sequences)
    try:
        return await model._asend(prepared, stop, tools or None, True, **kwargs)
    except Exception as exc:
        if stop and model._refuses_stop(exc):
            model._stop_supported = False
            return await model._asend(prepared, None, tools or None, True, **kwargs)
        raise


async def agenerate_stream(model: Any, messages: list[Message], stop_sequences: list[str] | None = None,
                           tools: list[dict[str, Any]] | None = None, **kwargs: Any) -> AsyncIterator[ModelDelta]:
    """`model.generate_stream`'s deltas, for a RemoteChatModel with `_asend`."""
    model._check_ready()
    policy, context = model.retry, model._error_context()
    attempt = 0
    while True:
        attempt += 1
        assembler, stop_filter = StreamAssembler(), StopFilter(list(stop_sequences or []))
        progressed = False
        try:
            response = await _arequest(model, messages, stop_sequences, tools, kwargs)
            try:
                async for chunk in response:
                    piece = stop_filter.feed(assembler.add(chunk))
                    if piece:
                        progressed = True
                        yield ModelDelta(content=piece)
            finally:
                close: Callable[[], Any] | None = getattr(response, "aclose", None)
                if close is not None:
                    try:
                        await close()
                    except Exception:
                        pass
            break
        except (GeneratorExit, asyncio.CancelledError):
            raise
        except Exception as exc:
            info = classify_error(exc)
            if not _should_retry(policy, info, attempt):
                error = context.convert(exc, attempt, info)
                if progressed and info.retryable:
                    error = type(error)(f"The reply stream was cut off part-way; {error}")
                raise error from exc
            notice = _notice(policy, info, attempt, discarded=progressed)
            yield ModelDelta(retry=notice)
            await asyncio.sleep(notice.wait_s)
    tail = stop_filter.flush()
    if tail:
        yield ModelDelta(content=tail)
    content = stop_filter.text
    tool_calls = assembler.tool_calls()
    check_content_filter(assembler.finish_reason, content, tool_calls, model.model_id)
    yield ModelDelta(reply=ModelReply(content=content, token_usage=usage_of(assembler.usage, messages, content),
                                      tool_calls=tool_calls))


def supports_async(model: Any) -> bool:
    """Whether `model` can stream its reply in an event loop (an adapter with `_asend`)."""
    return callable(getattr(model, "_asend", None))
