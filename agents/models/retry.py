"""Bounded retries with exponential backoff and jitter, for calls and for streams.

Why: rate limits, 5xx errors, timeouts and dropped connections are routine with hosted models; they
should cost a short wait, not a failed run. Everything else fails at once with one clear error.
"""
from __future__ import annotations

import logging
import os
import random
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, TypeVar

from agents.models.errors_mapping import ErrorInfo, classify_error, describe_exception, to_model_error

logger = logging.getLogger("agents.models")

T = TypeVar("T")


def _env_number(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    try:
        return float(value)
    except ValueError:
        logger.warning("Ignoring %s=%r: not a number.", name, value)
        return default


@dataclass
class RetryPolicy:
    """How often and how long to retry. Delay of retry n (from 0): initial * multiplier**n, capped, +/- jitter."""
    max_retries: int = 4
    initial_delay: float = 1.0
    max_delay: float = 30.0
    multiplier: float = 2.0
    jitter: float = 0.25  # fraction of the delay added or removed at random
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)

    @classmethod
    def from_env(cls) -> "RetryPolicy":
        """Read AGENTDECK_MODEL_MAX_RETRIES and AGENTDECK_MODEL_RETRY_DELAY (seconds, first delay)."""
        return cls(
            max_retries=max(0, int(_env_number("AGENTDECK_MODEL_MAX_RETRIES", 4))),
            initial_delay=max(0.0, _env_number("AGENTDECK_MODEL_RETRY_DELAY", 1.0)),
        )

    def delay(self, retry_index: int, retry_after: float | None = None) -> float:
        base = min(self.max_delay, self.initial_delay * (self.multiplier ** retry_index))
        if retry_after is not None and retry_after > 0:
            base = min(self.max_delay, max(base, retry_after))  # honour Retry-After, within bounds
        spread = base * self.jitter
        return max(0.0, base + random.uniform(-spread, spread))


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


def call_with_retry(fn: Callable[[], T], policy: RetryPolicy, context: ErrorContext) -> T:
    """Call `fn`, retrying transient failures; raise one AgentDeck error when it fails for good."""
    attempt = 0
    while True:
        attempt += 1
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - every backend error is sorted below
            info = classify_error(exc)
            if not _should_retry(policy, info, attempt):
                raise context.convert(exc, attempt, info) from exc
            wait = policy.delay(attempt - 1, info.retry_after)
            logger.warning("Model %s: %s (%s); retry %d/%d in %.2fs", context.model_id, info.category,
                           describe_exception(exc), attempt, policy.max_retries, wait)
            policy.sleep(wait)


def stream_with_retry(start: Callable[[], Iterator[T]], policy: RetryPolicy, context: ErrorContext,
                      is_progress: Callable[[T], bool] = lambda item: True) -> Iterator[T]:
    """Iterate the stream made by `start()`, starting it again on transient failures.

    A stream is only restarted while nothing has been passed on to the caller: once content has been
    yielded a retry would repeat it, so a dropped connection then raises ModelConnectionError.
    """
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
        except Exception as exc:  # noqa: BLE001
            info = classify_error(exc)
            if progressed or not _should_retry(policy, info, attempt):
                error = context.convert(exc, attempt, info)
                if progressed and info.retryable:
                    error = type(error)(f"The reply stream was cut off part-way; {error}")
                raise error from exc
            wait = policy.delay(attempt - 1, info.retry_after)
            logger.warning("Model %s stream: %s (%s); retry %d/%d in %.2fs", context.model_id, info.category,
                           describe_exception(exc), attempt, policy.max_retries, wait)
            policy.sleep(wait)
