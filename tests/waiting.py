"""Waiting for a condition in tests: never a fixed sleep, which is a flake on a loaded machine or time wasted."""
from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any


def wait_until(condition: Callable[[], Any], timeout: float = 30.0, what: str = "the condition",
               poll_s: float = 0.005) -> Any:
    """`condition()`'s first truthy value, checked every `poll_s`; AssertionError naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        pause.wait(poll_s)


async def wait_until_async(condition: Callable[[], Awaitable[Any]], timeout: float = 30.0,
                           what: str = "the condition", poll_s: float = 0.05) -> Any:
    """`wait_until` for an async condition (an MCP or HTTP client's call), in the caller's event loop."""
    deadline = time.monotonic() + timeout
    while True:
        value = await condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(poll_s)
