"""Bounded retries with exponential backoff and jitter, for calls and for streams.

Why: rate limits, 5xx errors, timeouts and dropped connections are routine with hosted models; they
should cost a short wait, not a failed run. Everything else fails at once with one clear error. A
provider's Retry-After is honoured up to a cap, every wait is announced first (a RetryNotice) so the
person sees it, and waits end at once when the call is cancelled (agents/models/cancel.py).
"""
from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from agents.errors import AgentInterrupted
from agents.models.base import RetryNotice
from agents.models.cancel import CancelToken, current_token
from agents.models.errors_mapping import ErrorInfo, classify_error, describe_exception, to_model_error

logger = logging.getLogger("agents.models")

T = TypeVar("T")


@dataclass
class RetryPolicy:
    """How often and how long to retry. Delay of retry n (from 0): initial * multiplier**n, capped, +/- jitter."""
    max_retries: int = 4
    initial_delay: float = 1.0
    max_delay: float = 30.0
    multiplier: float = 2.0
    jitter: float = 0.25  # fraction of the delay added or removed at random
    max_retry_after: float = 60.0  # the longest Retry-After obeyed; a longer one is cut to this
    #: How to wait. The default waits on the call's cancel token (Stop ends it); tests may record instead.
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)

    def delay(self, retry_index: int, retry_after: float | None = None) -> float:
        """Seconds before retry `retry_index` (from 0). A Retry-After is obeyed exactly (never less),
        up to `max_retry_after`; otherwise exponential backoff with jitter."""
        if retry_after is not None and retry_after > 0:
            return min(retry_after, self.max_retry_after)
        base = min(self.max_delay, self.initial_delay * (self.multiplier ** retry_index))
        spread = base * self.jitter
        return max(0.0, base + random.uniform(-spread, spread))

    def pause(self, seconds: float, cancel: CancelToken | None) -> None:
        """Wait before a retry; raise AgentInterrupted as soon as the call is cancelled."""
        if cancel is not None and self.sleep is time.sleep:
            stopped = cancel.wait(seconds)
        else:
            self.sleep(seconds)
            stopped = cancel is not None and cancel.cancelled
        if stopped:
            raise AgentInterrupted("The model call was stopped while waiting to retry.")


@dataclass
class ErrorContext:
    """What `to_model_error` needs to write a good message for one model."""
    model_id: str
    key_env: str | None = None
    endpoint: str | None = None
    secrets: tuple[str, ...] = field(default=(), repr=False)

    def convert(self, exc: BaseException, attempts: int, info: ErrorInfo | None = None) -> Exception:
        return to_model_error(exc, self.model_id, attempts=attempts, key_env=self.key_env,
                              endpoint=self.endpoint, secrets=self.secrets, info=info)


def _should_retry(policy: RetryPolicy, info: ErrorInfo, attempt: int) -> bool:
    return info.retryable and attempt <= policy.max_retries


def _notice(policy: RetryPolicy, info: ErrorInfo, attempt: int, discarded: bool) -> RetryNotice:
    wait = policy.delay(attempt - 1, info.retry_after)
    return RetryNotice(reason=info.reason or info.category, category=info.category, attempt=attempt,
                       max_retries=policy.max_retries, wait_s=round(wait, 3), retry_after_s=info.retry_after,
                       discarded_text=discarded)


def _log(context: ErrorContext, exc: BaseException, notice: RetryNotice, what: str = "") -> None:
    logger.warning("Model %s%s: %s (%s); retry %d/%d in %.2fs", context.model_id, what, notice.reason,
                   describe_exception(exc), notice.attempt, notice.max_retries, notice.wait_s)


def call_with_retry(fn: Callable[[], T], policy: RetryPolicy, context: ErrorContext,
                    on_retry: Callable[[RetryNotice], None] | None = None) -> T:
    """Call `fn`, retrying transient failures; raise one AgentDeck error when it fails for good."""
    cancel = current_token()
    attempt = 0
    while True:
        attempt += 1
        try:
            return fn()
        except Exception as exc:
            if cancel is not None and cancel.cancelled:
                raise AgentInterrupted("The model call was stopped.") from exc
            info = classify_error(exc)
            if not _should_retry(policy, info, attempt):
                raise context.convert(exc, attempt, info) from exc
            notice = _notice(policy, info, attempt, discarded=False)
            _log(context, exc, notice)
            if on_retry is not None:
                on_retry(notice)
            policy.pause(notice.wait_s, cancel)


def stream_with_retry(start: Callable[[], Iterator[T]], policy: RetryPolicy, context: ErrorContext,
                      is_progress: Callable[[T], bool] = lambda item: True,
                      notify: Callable[[RetryNotice], T] | None = None) -> Iterator[T]:
    """Iterate the stream made by `start()`, starting it again on transient failures.

    Before each wait it yields `notify(notice)`. A stream that fails after passing on content is restarted
    too, with `notice.discarded_text` set: the consumer drops what it got. Without `notify` the consumer
    could not be told, so such a stream fails with ModelConnectionError instead of repeating text.
    """
    cancel = current_token()
    attempt = 0
    while True:
        attempt += 1
        progressed = False
        try:
            for item in start():
                if is_progress(item):
                    progressed = True
                yield item
            return
        except GeneratorExit:
            raise
        except Exception as exc:
            if cancel is not None and cancel.cancelled:
                raise AgentInterrupted("The model call was stopped.") from exc
            info = classify_error(exc)
            if (progressed and notify is None) or not _should_retry(policy, info, attempt):
                error = context.convert(exc, attempt, info)
                if progressed and info.retryable:
                    error = type(error)(f"The reply stream was cut off part-way; {error}")
                raise error from exc
            notice = _notice(policy, info, attempt, discarded=progressed)
            _log(context, exc, notice, " stream")
            if notify is not None:
                yield notify(notice)
            policy.pause(notice.wait_s, cancel)
