"""Two replicas behind the proxy against one replica alone, and the time a chat takes to continue after its
replica is killed, measured in the same run on this machine.

    .venv/bin/python bench/cluster.py [--follow-ups 20]

It starts the cluster of `make cluster-up` (deploy/cluster/cluster.py: redis-server, moto's S3 server, two app
replicas, nginx with cookie affinity) in a temp folder on free loopback ports, with the replay model (offline).
Two sessions, each a gradio_client (the app's HTTP API): one through the proxy with an affinity cookie that
lands on replica 0, one straight to replica 0 (what a single machine serves, but with the shared stores). After
a first message in each (cold: the sandbox starts), the follow-ups alternate between the two sessions, so both
see the same machine; each is timed from submit to its answer (a run of one step, `final_answer(x + 1)`).
gradio_client polls its reader every 50 ms, the same in both paths, so compare the two rather than read either
as the server's own latency.

Failover: the proxied session's replica is killed (SIGKILL); the time is taken until the page's load through the
proxy answers again on the other replica (it reopens the chat from the store) and until a follow-up that needs
the first message's variable is answered there (the variables rebuilt by re-running the saved code).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "ui"))
sys.path.insert(0, str(ROOT / "tests"))

from cluster_client import Cluster, client, cookie_for, upstream_for  # noqa: E402
from nothing_lost_harness import ANSWER, SET_X, text_of  # noqa: E402
from ui_testlib import code_reply, write_transcript  # noqa: E402

from ui.saved.store import new_token  # noqa: E402

DOUBLE_X = code_reply("Use x again.", "final_answer(x * 2)")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def follow_up(tab, text: str = "Use x") -> tuple[float, str]:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    chat = tab.submit({"text": text, "files": []}, api_name="/run").result(timeout=300)[0]
    return time.perf_counter() - started, text_of(chat[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--follow-ups", type=int, default=20, help="timed follow-ups per path (20)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="agentdeck-cluster-") as temp:
        folder = Path(temp)
        transcript = write_transcript(folder / "script.json", [SET_X, ANSWER] + [ANSWER] * (args.follow_ups + 4))
        cluster = Cluster(folder / "cluster", extra_env={
            "AGENTDECK_MODEL": f"replay:{transcript}", "AGENTDECK_RUNS_PER_MINUTE": "1000"})
        began = time.perf_counter()
        cluster.start()
        print(f"cluster up in {time.perf_counter() - began:.1f} s: proxy {cluster.proxy_url}")
        errors: list[str] = []
        try:
            cookie = cookie_for(cluster, 0)
            proxied, direct = client(cluster.proxy_url, cookie), client(cluster.replica_url(0))
            tokens = {"proxy": new_token(), "direct": new_token()}
            timings: dict[str, list[float]] = {"proxy": [], "direct": []}
            for name, tab in (("proxy", proxied), ("direct", direct)):
                tab.predict({"token": tokens[name]}, api_name="/browser_session")
                cold, answer = follow_up(tab, "Set x and use it")
                print(f"{name}: first message (cold) {cold * 1000:.0f} ms, answer {answer}")
            for _ in range(args.follow_ups):
                for name, tab in (("proxy", proxied), ("direct", direct)):
                    seconds, answer = follow_up(tab)
                    timings[name].append(seconds)
                    if answer != "42":
                        errors.append(f"{name}: answered {answer!r}")
            print(f"\n{'path':<26} {'follow-ups':>10} {'median ms':>10} {'p95 ms':>8} {'max ms':>8}")
            for name, label in (("proxy", "proxy -> replica 0"), ("direct", "replica 0 alone")):
                ms = [s * 1000 for s in timings[name]]
                print(f"{label:<26} {len(ms):>10} {statistics.median(ms):>10.1f} {percentile(ms, 95):>8.1f} "
                      f"{max(ms):>8.1f}")

            write_transcript(transcript, [DOUBLE_X] * 4)  # the next agent needs x, rebuilt from the saved code
            cluster.kill_replica(0)
            killed = time.perf_counter()
            proxied.submit({"token": tokens["proxy"]}, api_name="/browser_session").result(timeout=300)
            reopened = time.perf_counter() - killed
            _, answer = follow_up(proxied, "Double x")
            answered = time.perf_counter() - killed
            where = cluster.replica_of(upstream_for(cluster.proxy_url, cookie))
            if answer != "82" or where != 1:
                errors.append(f"failover: answer {answer!r} from replica {where}")
            print(f"\nfailover (replica 0 killed): chat reopened through the proxy on replica {where} after "
                  f"{reopened:.2f} s; the follow-up needing the rebuilt variable answered {answer} after "
                  f"{answered:.2f} s")
        finally:
            cluster.stop()
    print(f"errors: {len(errors)}" + "".join(f"\n  {e}" for e in errors))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
