"""Load benchmark of the web UI: 1, then 16 concurrent sessions running a 10-step scripted task.

    .venv/bin/python bench/ui_load.py [--sessions 1,16] [--steps 10]

It starts `python app.py` on a free loopback port with the replay model (offline, deterministic) and drives
it through its real HTTP interface: each session is one process speaking Gradio's queue protocol (sse_v3)
as the web page does (POST /gradio_api/queue/join, then the server-sent events of /gradio_api/queue/data,
full outputs first and diffs after, applied with gradio_client's apply_diff). Every session runs the same
10-step code task (each step's code sleeps 0.3 s in that session's sandbox and prints a running total; the
last calls final_answer), twice: cold (the sandbox starts) and warm (a follow-up in the same session). All
sessions start each phase together (a barrier), so with equal steps they finish their steps at the same
moments: the worst case for bursts, not a spread-out crowd.

What is measured, on one machine with one clock:
  * event-to-client latency of the step-level events: with every update the app sends (in its hidden
    run-clock output) the `timestamp` the agent gave each StepStarted / StepFinished / FinalAnswer /
    RunFinished event it contains when it created it; the client notes time.time() when the server-sent
    event carrying that update has been read off the socket and parsed. Latency = arrival - timestamp, over
    the StepStarted and StepFinished events (2 per step). It covers the agent's event queue, the app's
    drain (which gathers a burst for at least 20 ms before showing it, so ~20 ms is the floor), the app's
    rendering, Gradio's queue, diff and SSE, and the client's parsing. "in-app" is the part up to the
    moment the app built the update (its `sent_at`), before Gradio handles it.
  * throughput: completed runs and steps per second of wall time for the whole phase; "client cpu s" is
    the CPU time all client processes used (they share the machine's cores with the server and sandboxes).
Why not gradio_client for the session: it hands each update from its reader thread to the caller through a
loop that polls every 50 ms (adding up to 50 ms to every figure) and busy-waits at 1 ms while iterating
(burning CPU the server needs); a browser does neither.
Target: p95 latency with 16 sessions within 2x of one session, and no errors.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import secrets
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "ui"))

import httpx  # noqa: E402
from conftest import code_reply, run_app, write_transcript  # noqa: E402
from gradio_client.utils import apply_diff  # noqa: E402


PACE_S = 0.3  # each step's code sleeps this long: a stand-in for model and execution time


def script(steps: int) -> list[str]:
    replies = [code_reply(f"Step {i}: add to the running total.",
                          f"import time\ntime.sleep({PACE_S})\ntotal = {'total + ' if i > 1 else ''}{i}\n"
                          "print('total is', total)")
               for i in range(1, steps)]
    replies.append(code_reply("Done.", "final_answer(total)"))
    return replies


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


class BrowserSession:
    """One browser tab, speaking Gradio's own queue protocol (sse_v3) the way the web page does.

    POST <api>/queue/join starts the event; GET <api>/queue/data (server-sent events) streams its updates:
    the first `process_generating` message carries every output in full, later ones carry diffs, which are
    applied as the page applies them. Each message's arrival is noted when it has been read off the socket
    and parsed, with no polling in between (gradio_client hands updates over through a 50 ms polling loop,
    which would add up to 50 ms to every figure and burn CPU busy-waiting).
    """

    def __init__(self, url: str, endpoint: dict) -> None:
        self.url = url.rstrip("/")
        self.endpoint = endpoint  # {"fn_index", "defaults", "api"}
        self.session_hash = secrets.token_hex(6)
        self.http = httpx.Client(timeout=httpx.Timeout(None, connect=30.0))

    def submit(self, message: dict) -> Iterator[tuple[float, list]]:
        """Run the endpoint with `message` in the first input; yield (arrival time, all outputs) per update."""
        api = self.endpoint["api"]
        data = [message, *self.endpoint["defaults"][1:]]
        joined = self.http.post(f"{self.url}{api}/queue/join", json={
            "data": data, "fn_index": self.endpoint["fn_index"], "session_hash": self.session_hash,
            "event_data": None, "trigger_id": None})
        joined.raise_for_status()
        event_id = joined.json()["event_id"]
        outputs: list | None = None
        with self.http.stream("GET", f"{self.url}{api}/queue/data", params={"session_hash": self.session_hash}) as stream:
            buffer = b""
            for chunk in stream.iter_raw():
                buffer += chunk
                while b"\n\n" in buffer:
                    raw, buffer = buffer.split(b"\n\n", 1)
                    if not raw.startswith(b"data:"):
                        continue
                    message_in = json.loads(raw[5:])
                    arrived = time.time()
                    if message_in.get("event_id") != event_id:
                        continue
                    kind = message_in.get("msg")
                    if kind == "process_generating":
                        data_in = message_in["output"]["data"]
                        if outputs is None:
                            outputs = list(data_in)
                        else:
                            outputs = [apply_diff(old, diff) for old, diff in zip(outputs, data_in)]
                        yield arrived, outputs
                    elif kind == "process_completed":
                        if not message_in.get("success", True):
                            raise RuntimeError(f"the run failed: {message_in.get('output')}")
                        return

    def close(self) -> None:
        self.http.close()


def endpoint_of(url: str, api_name: str) -> dict:
    """The fn_index of `api_name` and its inputs' default values, from the app's config (as the page reads it)."""
    config = httpx.get(url + "config", timeout=30).json()
    dependency = next(d for d in config["dependencies"] if d.get("api_name") == api_name)
    components = {c["id"]: c for c in config["components"]}
    defaults = [components[i]["props"].get("value") for i in dependency["inputs"]]
    return {"fn_index": dependency["id"], "defaults": defaults, "api": config.get("api_prefix", "/gradio_api")}


def one_session(url: str, endpoint: dict, steps: int, ready: list, done: list, results: "mp.Queue") -> None:
    """One browser session, in its own process: run the task once per phase, in the same session."""
    session = BrowserSession(url, endpoint)
    for index, (barrier, finished) in enumerate(zip(ready, done)):
        try:
            barrier.wait(300)
        except threading.BrokenBarrierError:
            return
        cpu = time.process_time()
        outcome = run_task(session, steps)
        outcome["cpu_s"] = time.process_time() - cpu
        results.put((index, outcome))
        try:
            finished.wait(300)
        except threading.BrokenBarrierError:
            return
    session.close()


def run_task(session: BrowserSession, steps: int) -> dict:
    """Submit the task, read every streamed update; latencies of the step events it carried, and errors."""
    latencies: list[float] = []
    server: list[float] = []
    errors: list[str] = []
    try:
        finished_steps = 0
        last = None
        for arrived, update in session.submit({"text": "Add up the numbers step by step.", "files": []}):
            last = update
            for kind, step, parent, stamp in update[4]["events"]:
                if kind in ("step_started", "step_finished"):
                    latencies.append(arrived - stamp)
                    server.append(update[4]["sent_at"] - stamp)
                finished_steps += kind == "step_finished"
        final_text = json.dumps(last[0][-1]) if last else ""
        expected = str(sum(range(1, steps)))
        if finished_steps != steps or expected not in final_text:
            errors.append(f"run incomplete: {finished_steps} steps, last message {final_text[:200]}")
    except Exception as exc:  # noqa: BLE001
        errors.append(f"{type(exc).__name__}: {exc}")
    return {"latencies": latencies, "server": server, "errors": errors}


def summarise(phase: dict, sessions: int, steps: int) -> dict:
    latencies, server_part, errors, wall = phase["latencies"], phase["server"], phase["errors"], phase["wall"]
    return {
        "sessions": sessions, "wall_s": wall, "errors": errors, "samples": len(latencies),
        "median_ms": statistics.median(latencies) * 1000 if latencies else float("nan"),
        "p95_ms": percentile(latencies, 95) * 1000, "max_ms": max(latencies, default=float("nan")) * 1000,
        "server_median_ms": statistics.median(server_part) * 1000 if server_part else float("nan"),
        "server_p95_ms": percentile(server_part, 95) * 1000,
        "runs_per_s": (sessions - len(errors)) / wall, "steps_per_s": (sessions - len(errors)) * steps / wall,
        "client_cpu_s": phase["cpu_s"],
    }


def batch(url: str, sessions: int, steps: int) -> tuple[dict, dict]:
    """Every session runs the task twice: cold (its sandbox starts) and warm (a follow-up). Returns both."""
    context = mp.get_context("fork")  # no threads in this process yet; quick to start 16
    ready = [context.Barrier(sessions + 1) for _ in range(2)]
    done = [context.Barrier(sessions + 1) for _ in range(2)]
    results = context.Queue()
    endpoint = endpoint_of(url, "run")
    workers = [context.Process(target=one_session, args=(url, endpoint, steps, ready, done, results), daemon=True)
               for _ in range(sessions)]
    for worker in workers:
        worker.start()
    phases = [{"latencies": [], "server": [], "errors": [], "wall": 0.0, "cpu_s": 0.0} for _ in range(2)]
    for phase, barrier, finished in zip(phases, ready, done):
        barrier.wait(300)
        started = time.time()
        finished.wait(600)
        phase["wall"] = time.time() - started
    for _ in range(2 * sessions):
        index, outcome = results.get(timeout=60)
        for key in ("latencies", "server", "errors"):
            phases[index][key].extend(outcome[key])
        phases[index]["cpu_s"] += outcome.get("cpu_s", 0.0)
    for worker in workers:
        worker.join(60)
    return summarise(phases[0], sessions, steps), summarise(phases[1], sessions, steps)


def report(title: str, results: list[dict]) -> bool:
    print(f"\n{title}")
    print(f"{'sessions':>8} {'median ms':>10} {'p95 ms':>8} {'max ms':>8} {'samples':>8} {'runs/s':>7} "
          f"{'steps/s':>8} {'wall s':>7} {'in-app med/p95 ms':>18} {'client cpu s':>12} errors")
    for r in results:
        print(f"{r['sessions']:>8} {r['median_ms']:>10.1f} {r['p95_ms']:>8.1f} {r['max_ms']:>8.1f} {r['samples']:>8} "
              f"{r['runs_per_s']:>7.2f} {r['steps_per_s']:>8.1f} {r['wall_s']:>7.2f} "
              f"{r['server_median_ms']:>8.1f}/{r['server_p95_ms']:<9.1f} {r['client_cpu_s']:>12.2f} {len(r['errors'])}")
        for error in r["errors"][:5]:
            print("   error:", error)
    if len(results) >= 2:
        ratio = results[-1]["p95_ms"] / results[0]["p95_ms"]
        print(f"p95 with {results[-1]['sessions']} sessions / p95 with {results[0]['sessions']}: {ratio:.2f}x "
              f"(target <= 2x: {'met' if ratio <= 2.0 else 'NOT met'})")
    return all(not r["errors"] for r in results)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", default="1,16", help="comma-separated session counts (default 1,16)")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=1, help="warm-up runs before measuring")
    args = parser.parse_args()
    counts = [int(n) for n in args.sessions.split(",") if n.strip()]
    with tempfile.TemporaryDirectory(prefix="agentdeck-bench-") as tmp:
        base = Path(tmp)
        transcript = write_transcript(base / "bench.json", script(args.steps) * 2)
        (base / "data").mkdir()
        with run_app(transcript, base / "data", {"AGENTDECK_MAX_STEPS": str(args.steps + 2)}) as url:
            if args.warmup:
                batch(url, args.warmup, args.steps)
            results = [batch(url, n, args.steps) for n in counts]
    ok = report("Cold: each session's first task (includes starting its sandbox, which pre-imports pandas, "
                "matplotlib, scipy...)", [cold for cold, _ in results])
    ok = report("Warm: the same task again as a follow-up in each session (sandbox running) -- the streaming "
                "figure the target applies to", [warm for _, warm in results]) and ok
    print("no errors" if ok else "ERRORS")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
