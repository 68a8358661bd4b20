"""Benchmark: the sandbox against plain CPython ``exec`` of the same code, in the same run.

Usage: python bench/executor.py [--repeat N] [--backend NAME]
Prints, for each workload, the wall time of plain exec (compile included) and of ``PythonSandbox.run``
(the full round trip: app -> worker -> app), interleaved so machine noise hits both, and their ratio;
then the round trip of one tiny step (and what it adds to plain exec, with few and with many variables in the
session); then a cold start (a new sandbox to its first step's result) and the memory an idle sandbox holds.
All on the backend named by --backend (default: $AGENTDECK_SANDBOX, else local), in the same run.
Targets: ratio <= 1.5 on compute workloads; a tiny step adds at most 0.25 ms to plain exec on the local backend
and 1 ms on Docker (TINY_STEP_TARGETS_MS). Every tiny step is a text of its own (a counter in it), in the sandbox
and in the baseline alike, so nothing keyed on the code's text can flatter the figure. The CPU time a tiny step
costs the app process and the worker (getrusage and the host's kernel reading) is printed too: on a shared
machine it moves less than the wall time.

Two estimators are printed: the best (minimum) of the pairs, which is what the code costs when nothing else
disturbs it (the noise-robust figure on a shared 2-core machine, and the one the target is judged on), and
the median, which shows how much the machine's load moved things during this run. Each workload runs at
least --repeat pairs and keeps going for --min-seconds (so a 1 ms workload gets hundreds of pairs), spread
over --rounds round-robin passes so that a spell of load cannot decide one workload's figures.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import os
import resource
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from agents.executor import PythonSandbox, backends
from agents.executor.backend import SandboxSpec
from agents.executor.pool import WarmPool

SETUP = "import numpy as np\nimport pandas as pd\nimport re\n"
WORKLOADS = {
    "for-loop sum of 200k ints": "total = 0\nfor i in range(200_000):\n    total += i\n",
    "recursive fib(20)": "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nfib(20)\n",
    "comprehensions over 100k": (
        "xs = [i * 2 for i in range(100_000)]\nd = {i: i % 7 for i in range(100_000)}\n"
        "s = {x % 1000 for x in xs}\ng = sum(x for x in xs if x % 3 == 0)\n"
    ),
    "strings + regex, 50k lines": (
        "lines = [f'user{i},item{i % 97},{i * 3}' for i in range(50_000)]\ntext = '\\n'.join(lines)\n"
        "pat = re.compile(r'user(\\d+),item(\\d+),(\\d+)')\n"
        "found = [m.group(2) for m in pat.finditer(text)]\nout = ''.join(found[:1000]).upper()\n"
    ),
    "pandas groupby 200k rows": (
        "df = pd.DataFrame({'k': np.arange(200_000) % 100, 'v': np.arange(200_000, dtype=float)})\n"
        "res = df.groupby('k')['v'].mean().sort_values()\n"
    ),
    "class, 50k method calls": (
        "class Acc:\n    def __init__(self):\n        self.total = 0\n    def add(self, x):\n"
        "        self.total += x\n        return self\nacc = Acc()\nfor i in range(50_000):\n    acc.add(i)\n"
    ),
    "import numpy, pandas (loaded)": "import numpy\nimport pandas\n",
}
COMPUTE = set(list(WORKLOADS)[:6])
#: What a tiny step may add to plain exec, per backend (issue 27); others are judged against Docker's.
TINY_STEP_TARGETS_MS = {"local": 0.25, "docker": 1.0}
MAX_PAIRS = 500


def time_exec(code: str, ns: dict) -> float:
    sink = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(sink):
        exec(compile(code, "<bench>", "exec"), ns)
    return time.perf_counter() - t0


def time_sandbox(sb: PythonSandbox, code: str) -> float:
    t0 = time.perf_counter()
    r = sb.run(code)
    elapsed = time.perf_counter() - t0
    if r.error:
        raise RuntimeError(r.error)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15, help="at least this many pairs per workload")
    parser.add_argument("--min-seconds", type=float, default=1.5,
                        help="sample a workload for at least this long in all (at most 500 pairs)")
    parser.add_argument("--rounds", type=int, default=5, help="round-robin passes over the workloads")
    # The bench is a program of its own: it reads the app's variable for its default (the library does not).
    parser.add_argument("--backend", default=os.environ.get("AGENTDECK_SANDBOX") or None,
                        help="sandbox backend (default: $AGENTDECK_SANDBOX, else local)")
    parser.add_argument("--starts", type=int, default=3, help="cold starts to time")
    parser.add_argument("--tiny-only", action="store_true",
                        help="only the tiny step's round trip (no compute workloads, no starts)")
    args = parser.parse_args()
    backend = backends.resolve(args.backend)
    print(f"backend: {backend.name}; load average at start {_load()}")
    with tempfile.TemporaryDirectory() as work, PythonSandbox(
        workdir=work, authorized_imports=["numpy", "pandas"], timeout_s=120, backend=backend
    ) as sb:
        ns: dict = {}
        exec(SETUP, ns)
        sb.run(SETUP)
        if not args.tiny_only:
            print(f"{'workload':34} {'CPython exec':>13} {'sandbox':>11} {'ratio':>7} {'median ratio':>13} "
                  f"{'pairs':>6}")
        worst = 0.0
        samples = {name: ([], []) for name in WORKLOADS}
        for code in WORKLOADS.values() if not args.tiny_only else ():
            time_exec(code, ns), time_sandbox(sb, code)  # warm-up
        # Round-robin over the workloads, so a spell of load on this shared machine is spread over all of them
        # instead of deciding one workload's figures. Within a round, a workload's pairs are interleaved so
        # noise hits both sides; short workloads get more pairs (up to a time budget per round).
        for _ in range(args.rounds if not args.tiny_only else 0):
            for name, code in WORKLOADS.items():
                base, sand = samples[name]
                started, taken = time.perf_counter(), 0
                while taken < -(-args.repeat // args.rounds) or (
                        time.perf_counter() - started < args.min_seconds / args.rounds
                        and taken < MAX_PAIRS // args.rounds):
                    base.append(time_exec(code, ns))
                    sand.append(time_sandbox(sb, code))
                    taken += 1
        for name, (base, sand) in samples.items() if not args.tiny_only else ():
            b, s = min(base), min(sand)
            ratio = s / b
            median_ratio = statistics.median(sand) / statistics.median(base)
            if name in COMPUTE:
                worst = max(worst, ratio)
            print(f"{name:34} {b * 1e3:10.2f} ms {s * 1e3:8.2f} ms {ratio:6.2f}x {median_ratio:12.2f}x {len(base):6}")
        sb.run("x = 0")
        exec("x = 0", ns)
        base, best, median, cpu = tiny_step(sb, ns, args.repeat)
        print(f"{'tiny step x = x + N; print(x)':34} {base * 1e6:10.1f} us {best * 1e3:8.3f} ms"
              f"  (full round trip, best of {args.repeat} x 200 steps; median {median * 1e3:.3f} ms; "
              f"adds {(best - base) * 1e3:.3f} ms to exec; CPU per step: {cpu})")
        grow = ("big = {i: list(range(10)) for i in range(20_000)}\n"
                + "\n".join(f"w{i} = [{i}] * 10" for i in range(2000)))
        sb.run(grow)
        exec(grow, ns)
        base_many, best_many, _, cpu_many = tiny_step(sb, ns, args.repeat)
        print(f"{'tiny step, 20k objects + 2k vars':34} {base_many * 1e6:10.1f} us {best_many * 1e3:8.3f} ms"
              f"  (adds {(best_many - base_many) * 1e3:.3f} ms to exec; with few variables "
              f"{(best - base) * 1e3:.3f} ms; CPU per step: {cpu_many})")
        target = TINY_STEP_TARGETS_MS.get(backend.name, TINY_STEP_TARGETS_MS["docker"])
        added = max(best - base, best_many - base_many) * 1e3
        ratio = "" if args.tiny_only else f"worst compute ratio (best of each workload's pairs): {worst:.2f}x " \
            "(target <= 1.5x); "
        print(f"{ratio}tiny step adds {added:.3f} ms to exec at most (target on {backend.name}: <= {target:g} ms)")
    if not args.tiny_only:
        starts(backend, args.starts)
    print(f"load average at end {_load()}")


def _load() -> str:
    """The machine's 1, 5 and 15 minute load averages: on a shared machine the figures mean little without them."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


_steps = itertools.count(1)


def tiny_steps(count: int) -> list[str]:
    """`count` tiny steps, each a text never used before in this run (a growing constant)."""
    return [f"x = x + {next(_steps)}; print(x)" for _ in range(count)]


def _app_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def tiny_step(sb: PythonSandbox, ns: dict, repeat: int) -> tuple[float, float, float, str]:
    """Plain exec of the tiny step (median of best-of-200), the sandbox's best and median per step, and the CPU
    time per step of the app process and of the worker (as the backend's host reads it from the kernel)."""
    rounds = []
    host = sb.host
    worker_cpu = host.cpu_seconds if host is not None and host.capabilities.cpu_time else None
    app0, worker0 = _app_cpu(), worker_cpu() if worker_cpu else 0.0
    for _ in range(repeat):
        steps = tiny_steps(200)
        t0 = time.perf_counter()
        for step in steps:
            sb.run(step)
        rounds.append((time.perf_counter() - t0) / 200)
    n = 200 * repeat
    app_us = (_app_cpu() - app0) / n * 1e6
    cpu = f"app {app_us:.0f} us"
    if worker_cpu is not None and sb.host is host:
        cpu += f", worker {(worker_cpu() - worker0) / n * 1e6:.0f} us"
    base = statistics.median([min(time_exec(step, ns) for step in tiny_steps(200)) for _ in range(repeat)])
    return base, min(rounds), statistics.median(rounds), cpu


def starts(backend: backends.SandboxBackend, count: int) -> None:
    """Cold start (construction to the first step's result, numpy and pandas preloaded) and the memory of an
    idle sandbox; then a warm start from the backend's pool of ready sandboxes, where it has one."""
    cold, memory = [], []
    for _ in range(count):
        with tempfile.TemporaryDirectory() as work:
            t0 = time.perf_counter()
            with PythonSandbox(work, authorized_imports=["numpy", "pandas"], backend=backend) as sb:
                r = sb.run("1")
                cold.append(time.perf_counter() - t0)
                if r.error:
                    raise RuntimeError(r.error)
                host = sb.host
                size = host.memory_bytes() if host is not None else None
                if size:
                    memory.append(size)
    print(f"cold start (new sandbox to its first result, numpy+pandas): median {statistics.median(cold):.2f} s, "
          f"best {min(cold):.2f} s of {count}")
    if memory:
        mib = statistics.median(memory) / 2**20
        print(f"memory per idle sandbox: {mib:.0f} MiB (proportional set size, median of {len(memory)}); "
              f"{1024 / mib:.0f} sandboxes per GiB")
    else:
        print("memory per idle sandbox: not reported by this backend")
    warm_start(backend, count)


def warm_start(backend: backends.SandboxBackend, count: int) -> None:
    """A new sandbox's first result when the pool had one ready (settled: its libraries loaded, its CPU idle)."""
    if not backend.capabilities.warm_start:
        print("warm start: this backend has no warm starts")
        return
    pool = WarmPool(backend, size=1)
    imports = ("numpy", "pandas")
    spec = SandboxSpec(workspace=None, authorized_imports=imports)
    warm = []
    try:
        pool.prewarm(spec)
        for _ in range(count):
            deadline = time.monotonic() + 120
            while not pool.ready_hosts(spec) and time.monotonic() < deadline:
                time.sleep(0.05)
            hosts = pool.ready_hosts(spec)
            if not hosts:
                print("warm start: the pool started nothing in 120 s")
                return
            cpu, still = hosts[0].cpu_seconds(), 0  # settled: no CPU used for 0.3 s
            while still < 6 and time.monotonic() < deadline:
                time.sleep(0.05)
                now = hosts[0].cpu_seconds()
                still, cpu = (still + 1, now) if now == cpu else (0, now)
            with tempfile.TemporaryDirectory() as work:
                t0 = time.perf_counter()
                with PythonSandbox(work, authorized_imports=list(imports), backend=backend, pool=pool) as sb:
                    r = sb.run("1")
                    warm.append(time.perf_counter() - t0)
                    if r.error:
                        raise RuntimeError(r.error)
                    if sb.host is not hosts[0]:  # the pool's sandbox could not be used: this was a cold start
                        raise RuntimeError("the warm start did not use the pooled sandbox")
    finally:
        pool.close()
    print(f"warm start (a ready sandbox from the pool to its first result): median "
          f"{statistics.median(warm) * 1e3:.0f} ms, best {min(warm) * 1e3:.0f} ms of {count} (target <= 500 ms)")

if __name__ == "__main__":
    main()
