"""Reading how long a provider asks to wait (Retry-After) from any backend's exception.

Why a module: the header hides in different places. litellm copies the provider's headers to
`exc.litellm_response_headers` and leaves `exc.response.headers` empty; openai and httpx errors keep them
on `exc.response.headers`; some SDKs expose `exc.headers`. Values are seconds, an HTTP date, or
milliseconds in `retry-after-ms` (OpenAI, Anthropic).
"""
from __future__ import annotations

import time
from email.utils import parsedate_to_datetime
from typing import Any


def _headers_of(exc: BaseException) -> list[Any]:
    found = []
    for holder in (getattr(exc, "litellm_response_headers", None), getattr(exc, "headers", None),
                   getattr(getattr(exc, "response", None), "headers", None)):
        if holder is not None and hasattr(holder, "get"):
            found.append(holder)
    return found


def _header(headers: Any, name: str) -> str | None:
    try:
        value = headers.get(name)
        if value is None:
            value = headers.get(name.title())
    except Exception:
        return None
    return str(value).strip() if value is not None else None


def parse_retry_after(value: str, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After value (delay in seconds or an HTTP date); None if unreadable."""
    try:
        seconds = float(value)
    except ValueError:
        try:
            moment = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if moment is None:
            return None
        seconds = moment.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if seconds == seconds else None  # NaN is unreadable too


def retry_after_of(exc: BaseException) -> float | None:
    """The wait the provider asked for, looking through `raise ... from ...` wrappers; None when it did not say."""
    current: BaseException | None = exc
    depth = 0
    while current is not None and depth < 6:
        for headers in _headers_of(current):
            milliseconds = _header(headers, "retry-after-ms")
            if milliseconds:
                try:
                    return max(0.0, float(milliseconds) / 1000.0)
                except ValueError:
                    pass
            value = _header(headers, "retry-after")
            if value:
                seconds = parse_retry_after(value)
                if seconds is not None:
                    return seconds
        current = current.__cause__ or current.__context__
        depth += 1
    return None
