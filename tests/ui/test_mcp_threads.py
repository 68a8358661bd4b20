"""MCP tool calls take their threads under a limiter of their own (ui/mcp/endpoint.py): however many runs MCP
clients keep going, anyio's default limiter, which the web server's synchronous handlers share, keeps its tokens."""
from __future__ import annotations

import threading

import anyio

from ui.mcp.endpoint import MCP_THREADS, in_mcp_thread


def test_mcp_calls_never_take_the_default_limiters_tokens() -> None:
    async def main() -> tuple[int, int]:
        default = anyio.to_thread.current_default_thread_limiter()
        calls = default.total_tokens + 5  # more calls at once than the default limiter has tokens
        inside = threading.Barrier(calls + 1)
        seen: list[float] = []

        def long_call() -> None:
            inside.wait(timeout=30)  # every call holds its thread at once, as runs waiting for a person do
            seen.append(default.borrowed_tokens)

        async with anyio.create_task_group() as group:
            for _ in range(calls):
                group.start_soon(in_mcp_thread, long_call)
            await anyio.to_thread.run_sync(inside.wait, 30)  # the page's own sync work still gets a thread
        return calls, int(max(seen))

    calls, borrowed = anyio.run(main)
    assert calls <= MCP_THREADS
    assert borrowed <= 1  # only the page's one call above


def test_the_limiter_bounds_the_mcp_threads() -> None:
    async def main() -> int:
        running, peak, lock = [0], [0], threading.Lock()
        release = threading.Event()

        def call() -> None:
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            release.wait(5)
            with lock:
                running[0] -= 1

        async with anyio.create_task_group() as group:
            for _ in range(MCP_THREADS + 6):
                group.start_soon(in_mcp_thread, call)
            with anyio.fail_after(30):
                while running[0] < MCP_THREADS:
                    await anyio.sleep(0.01)
            release.set()
        return peak[0]

    assert anyio.run(main) == MCP_THREADS


