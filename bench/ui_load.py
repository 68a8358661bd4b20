"""Load benchmark of the web UI: 1, then 16 concurrent sessions running a 10-step scripted task.

    .venv/bin/python bench/ui_load.py [--sessions 1,16] [--steps 10]

It starts `python app.py` on a free loopback port with the replay model (offline, deterministic) and
drives it through its real HTTP interface with gradio_client, one Client (= one browser session) per
thread. Every session uploads nothing and runs the same 10-step code task (each step runs a line of code
in that session's sandbox; the last calls final_answer).

What is measured (honestly, on one machine, one clock):
  * event-to-client latency: the app streams, with every update, the `timestamp` of the step-level events
    (StepStarted / StepFinished / FinalAnswer / RunFinished) it contains, taken when the agent created the
    event. The client notes time.time() when the update carrying that event arrives in its loop. The
    difference covers the agent's event queue, the app's drain (which deliberately batches streamed text for
    up to 50 ms), Gradio's postprocessing and queue, the SSE stream and gradio_client's decoding. Server and
    client share the machine's clock, so no clock skew enters. With 16 sessions the client threads compete
    for the same 2 cores as the server, so the figure includes that contention (pessimistic).
  * throughput: completed runs and steps per second of wall time for the whole batch.
Target: p95 latency with 16 sessions within 2x of one session, and no errors.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "ui"))

from conftest import code_reply, run_app, write_transcript  # noqa: E402
from gradio_client import Client  # noqa: E402


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


def one_session(url: str, steps: int, phases: list[dict], ready: list[threading.Barrier], lock: threading.Lock) -> None:
    try:
        client = Client(url, verbose=False, download_files=False)
    except Exception as exc:  # noqa: BLE001
        phases[0]["errors"].append(f"connect: {exc}")
        for barrier in ready:
            barrier.abort()
        return
    for phase, barrier in zip(phases, ready):
        try:
            barrier.wait(300)
        except threading.BrokenBarrierError:
            return
        run_task(client, steps, phase["latencies"], phase["errors"], lock, phase["server"])
        try:
            phase["done"].wait(300)
        except threading.BrokenBarrierError:
            return


def run_task(client: Client, steps: int, latencies: list[float], errors: list[str], lock: threading.Lock,
             server_part: list[float]) -> None:
    try:
        job = client.submit({"text": "Add up the numbers step by step.", "files": []}, api_name="/run")
        mine: list[float] = []
        server: list[float] = []
        finished_steps = 0
        last = None
        for update in job:
            arrived = time.time()
            last = update
            for kind, step, parent, stamp in update[4]["events"]:
                if kind in ("step_started", "step_finished"):
                    mine.append(arrived - stamp)
                    server.append(update[4]["sent_at"] - stamp)
                finished_steps += kind == "step_finished"
        job.result(timeout=120)
        final_text = json.dumps(last[0][-1]) if last else ""
        expected = str(sum(range(1, steps)))
        if finished_steps != steps or expected not in final_text:
            errors.append(f"run incomplete: {finished_steps} steps, last message {final_text[:200]}")
        with lock:
            latencies.extend(mine)
            server_part.extend(server)
    except Exception as exc:  # noqa: BLE001
        errors.append(f"{type(exc).__name__}: {exc}")


def summarise(phase: dict, sessions: int, steps: int) -> dict:
    latencies, server_part, errors, wall = phase["latencies"], phase["server"], phase["errors"], phase["wall"]
    return {
        "sessions": sessions, "wall_s": wall, "errors": errors, "samples": len(latencies),
        "median_ms": statistics.median(latencies) * 1000 if latencies else float("nan"),
        "p95_ms": percentile(latencies, 95) * 1000, "max_ms": max(latencies, default=float("nan")) * 1000,
        "server_median_ms": statistics.median(server_part) * 1000 if server_part else float("nan"),
        "server_p95_ms": percentile(server_part, 95) * 1000,
        "runs_per_s": (sessions - len(errors)) / wall, "steps_per_s": (sessions - len(errors)) * steps / wall,
    }


def batch(url: str, sessions: int, steps: int) -> tuple[dict, dict]:
    """Every session runs the task twice: cold (its sandbox starts) and warm (a follow-up). Returns both."""
    lock = threading.Lock()
    phases = [{"latencies": [], "server": [], "errors": [], "wall": 0.0,
               "done": threading.Barrier(sessions + 1)} for _ in range(2)]
    ready = [threading.Barrier(sessions + 1) for _ in range(2)]
    threads = [threading.Thread(target=one_session, args=(url, steps, phases, ready, lock), daemon=True)
               for _ in range(sessions)]
    for t in threads:
        t.start()
    for phase, barrier in zip(phases, ready):
        barrier.wait(300)
        started = time.time()
        phase["done"].wait(600)
        phase["wall"] = time.time() - started
    for t in threads:
        t.join(60)
    return summarise(phases[0], sessions, steps), summarise(phases[1], sessions, steps)


def report(title: str, results: list[dict]) -> bool:
    print(f"\n{title}")
    print(f"{'sessions':>8} {'median ms':>10} {'p95 ms':>8} {'max ms':>8} {'samples':>8} {'runs/s':>7} "
          f"{'steps/s':>8} {'wall s':>7} {'in-app med/p95 ms':>18} errors")
    for r in results:
        print(f"{r['sessions']:>8} {r['median_ms']:>10.1f} {r['p95_ms']:>8.1f} {r['max_ms']:>8.1f} {r['samples']:>8} "
              f"{r['runs_per_s']:>7.2f} {r['steps_per_s']:>8.1f} {r['wall_s']:>7.2f} "
              f"{r['server_median_ms']:>8.1f}/{r['server_p95_ms']:<9.1f} {len(r['errors'])}")
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
