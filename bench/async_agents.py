"""Many agents waiting for a provider at once: a thread per agent (`run`) against one event loop (`arun`).

N agents (100) each run one task against a loopback OpenAI-compatible provider (a child process) that waits a
fixed latency (1 s) before streaming its reply (a final_answer tool call). Printed per mode, in one run: the wall
time, the peak number of threads (Python's and the OS's) and the peak growth of the process's resident memory.
The modes alternate twice (sync, async, sync, async) so both see the same machine.

What to expect (agents/loop/async_driver.py): `run` holds a thread per run and a reader thread per model call;
`arun` awaits the model call in the event loop and does the work between calls in a bounded pool of threads
(`STEP_THREADS`), so a run waiting for its provider holds no thread: the peak is the pool's size, not the number
of agents.
"""
from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

FINAL = {"type": "reply", "content": "", "tool_calls": [{"name": "final_answer", "arguments": {"answer": "ok"}}]}


def serve(latency_s: float) -> None:
    """The child process: the fake OpenAI server, every reply after `latency_s`."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "models"))
    from http.server import ThreadingHTTPServer

    from fake_openai_server import FakeOpenAIServer

    # socketserver's listen backlog is 5: a hundred agents connecting at once would see refused connections and
    # retry after a wait, which measures the fake server, not the agents.
    ThreadingHTTPServer.request_queue_size = 1024

    class SlowServer(FakeOpenAIServer):
        def _respond(self, handler: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
            time.sleep(latency_s)
            super()._respond(handler, body, FINAL)

    with SlowServer() as server:
        print(server.url, flush=True)
        threading.Event().wait()


class Sampler:
    """Peak threads and resident memory of this process, sampled every 10 ms."""

    def __init__(self) -> None:
        import psutil
        self._process = psutil.Process()
        self.base_rss = self._process.memory_info().rss
        #: Threads alive before the mode starts (idle pools an earlier mode left, e.g. litellm's).
        self.base_threads = threading.active_count()
        self.peak_py = self.peak_os = 0
        self.peak_rss = self.base_rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            self.peak_py = max(self.peak_py, threading.active_count())
            self.peak_os = max(self.peak_os, self._process.num_threads())
            self.peak_rss = max(self.peak_rss, self._process.memory_info().rss)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def agents(url: str, count: int) -> list[Any]:
    from agents import ToolCallingAgent
    from agents.models import load_model
    return [ToolCallingAgent(model=load_model("openai/bench-model", api_base=url, api_key="sk-bench-0000000000"),
                             verbosity=0, max_steps=2) for _ in range(count)]


def run_sync(team: list[Any]) -> list[Any]:
    answers: list[Any] = [None] * len(team)

    def one(index: int) -> None:
        answers[index] = team[index].run("Answer.")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(team))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def run_async(team: list[Any]) -> list[Any]:
    async def main() -> list[Any]:
        return list(await asyncio.gather(*(agent.arun("Answer.") for agent in team)))
    return asyncio.run(main())


def measure(mode: str, url: str, count: int) -> dict[str, float]:
    team = agents(url, count)
    with Sampler() as sampler:
        started = time.perf_counter()
        answers = run_sync(team) if mode == "sync" else run_async(team)
        wall = time.perf_counter() - started
    if answers != ["ok"] * count:
        raise SystemExit(f"{mode}: some runs failed: {[a for a in answers if a != 'ok'][:3]}")
    return {"wall_s": wall, "threads": sampler.peak_py, "base_threads": sampler.base_threads,
            "os_threads": sampler.peak_os, "rss_mb": (sampler.peak_rss - sampler.base_rss) / 2**20}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--latency", type=float, default=1.0, help="the provider's delay before each reply (s)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve:
        serve(options.latency)
        return
    child = subprocess.Popen([sys.executable, __file__, "--serve", "--latency", str(options.latency)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        measure("sync", url, 2)  # warm-up: litellm's import, its clients
        measure("async", url, 2)
        print(f"{options.agents} agents, provider latency {options.latency:.1f} s; idle process: "
              f"{threading.active_count()} threads")
        print(f"{'mode':>6} {'wall s':>7} {'threads at start':>17} {'peak threads':>13} {'peak OS threads':>16} "
              f"{'peak RSS growth MB':>19}")
        for mode in ("sync", "async", "sync", "async"):
            figures = measure(mode, url, options.agents)
            print(f"{mode:>6} {figures['wall_s']:>7.2f} {figures['base_threads']:>17.0f} {figures['threads']:>13.0f} "
                  f"{figures['os_threads']:>16.0f} "
                  f"{figures['rss_mb']:>19.1f}")
    finally:
        child.terminate()
        child.wait(10)


if __name__ == "__main__":
    main()
