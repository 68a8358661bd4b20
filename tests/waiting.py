"""Waiting for a condition in tests: never a fixed sleep, which is a flake on a loaded machine or time wasted."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
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
