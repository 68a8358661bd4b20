"""Load benchmark for a server shared with strangers: API-run floods and big uploads, and what they cost others.

    .venv/bin/python bench/abuse_load.py [--flood 24] [--uploads 6] [--upload-mb 60]

It starts `python app.py` on a loopback port with the replay model and, as a visitor with nothing but the
HTTP API would:
  * floods it with `--flood` API runs from as many clients (gradio_client, which never opens the page's
    heartbeat), each starting a sandbox, all from one address (the per-visitor limit applies);
  * uploads `--uploads` files of `--upload-mb` MB each to /gradio_api/upload (over the app's limit when
    larger than AGENTDECK_MAX_UPLOAD_MB);
while one "other" visitor keeps running a small task. It reports the server's memory (PSS of the app and
all its children: sandboxes and the preview child) before, at the peak and after the reaper ran, how many
flood runs were refused and why, what the upload folder kept, and the other visitor's run time during the
flood as a ratio against the same task on the quiet server (measured in the same run).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The page's own events are undocumented (the API page shows the API's endpoints, ui/api/): ask the info route for
# all endpoints, so gradio_client knows their parameters and these clients call them by name as before.
import gradio_client.utils  # noqa: E402
import httpx  # noqa: E402
from gradio_client import Client  # noqa: E402

gradio_client.utils.RAW_API_INFO_URL = "info?serialize=False&all_endpoints=True"

from tests.ui.ui_testlib import code_reply, run_app, write_transcript  # noqa: E402

OTHER = "10.9.9.9"  # the other visitor's address as the app sees it (the last X-Forwarded-For hop)
TASK = [code_reply("Compute.", "import time\nx = sum(range(10**5))\nfinal_answer(x)")]


def tree_pss_mb(root_pid: int) -> float:
    """PSS of a process and all its descendants, in MB (shared library pages counted once)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                total += next(int(line.split()[1]) for line in fh if line.startswith("Pss:"))
        except (OSError, StopIteration):
            continue
    return total / 1024


def server_pid(port: int) -> int:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as fh:
                    if f"GRADIO_SERVER_PORT={port}".encode() in fh.read():
                        with open(f"/proc/{entry}/cmdline", "rb") as cmd:
                            if b"app.py" in cmd.read():
                                return int(entry)
            except OSError:
                continue
    raise RuntimeError("the app's process was not found")


def one_run(url: str, model: str, visitor: str | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    try:
        headers = {"X-Forwarded-For": visitor} if visitor else None
        client = Client(url, verbose=False, download_files=False, headers=headers)
        # By name: a setting added to the form keeps its own place (and its default).
        client.predict({"text": "compute", "files": []}, model=model, agent_type="code", max_steps=3,
                       planning_interval=0, tools=[], imports="pandas", approval_mode="autonomous", api_name="/run")
        return time.perf_counter() - started, "ok"
    except Exception as exc:
        text = str(exc)
        kind = "rate-limited" if "Too many runs" in text else "busy" if "busy" in text else "error"
        return time.perf_counter() - started, kind


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--flood", type=int, default=24)
    parser.add_argument("--uploads", type=int, default=6)
    parser.add_argument("--upload-mb", type=int, default=60)
    parser.add_argument("--quiet-runs", type=int, default=5)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="agentdeck-abuse-"))
    transcript = write_transcript(base / "t.json", TASK)
    model = f"replay:{transcript}"
    env = {"AGENTDECK_MAX_UPLOAD_MB": "50", "AGENTDECK_PAGELESS_IDLE_S": "20", "AGENTDECK_MAX_SANDBOXES": "8",
           "AGENTDECK_RUNS_PER_MINUTE": "10",
           # the bench stands in for a proxy: the visitors' addresses come in X-Forwarded-For
           "AGENTDECK_TRUST_FORWARDED": "1"}
    data = base / "data"
    data.mkdir()
    from tests.ui.ui_testlib import free_port

    port = free_port()
    with run_app(transcript, data, extra_env=env, port=port) as url:
        pid = server_pid(port)
        quiet = [one_run(url, model, OTHER)[0] for _ in range(args.quiet_runs)]
        idle_mb = tree_pss_mb(pid)
        outcomes: list[str] = []
        peak = [idle_mb]
        other: list[float] = []
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                peak.append(tree_pss_mb(pid))
                stop.wait(0.5)

        def other_visitor() -> None:
            while not stop.is_set():
                seconds, kind = one_run(url, model, OTHER)
                if kind == "ok":
                    other.append(seconds)

        def flooder() -> None:
            outcomes.append(one_run(url, model)[1])

        def uploader() -> None:
            blob = os.urandom(1024 * 1024) * args.upload_mb
            try:
                response = httpx.post(url + "gradio_api/upload", files={"files": ("big.csv", blob)}, timeout=120)
                outcomes.append(f"upload-{response.status_code}")
            except httpx.HTTPError as exc:
                outcomes.append(f"upload-{type(exc).__name__}")

        threads = [threading.Thread(target=watch), threading.Thread(target=other_visitor)]
        threads += [threading.Thread(target=flooder) for _ in range(args.flood)]
        threads += [threading.Thread(target=uploader) for _ in range(args.uploads)]
        for thread in threads:
            thread.start()
        for thread in threads[2:]:
            thread.join()
        stop.set()
        for thread in threads[:2]:
            thread.join()
        time.sleep(1)
        after_flood = tree_pss_mb(pid)
        deadline = time.time() + 90  # the reaper runs every 30 s; pageless sessions go after 20 s here
        while time.time() < deadline and tree_pss_mb(pid) > idle_mb + 60:
            time.sleep(5)
        reaped = tree_pss_mb(pid)
        reaped_after = 90 - max(0.0, deadline - time.time())
        upload_dir = Path(os.environ.get("GRADIO_TEMP_DIR", Path(tempfile.gettempdir()) / "gradio"))
    counts = {kind: outcomes.count(kind) for kind in sorted(set(outcomes))}
    quiet_median = statistics.median(quiet)
    busy_median = statistics.median(other) if other else float("nan")
    print(f"server memory (PSS, app + children): idle {idle_mb:.0f} MB, peak {max(peak):.0f} MB, "
          f"right after the flood {after_flood:.0f} MB, {reaped:.0f} MB {reaped_after:.0f} s later (reaper)")
    print(f"flood outcomes: {counts}")
    print(f"other visitor's run: quiet median {quiet_median * 1000:.0f} ms, during the flood median "
          f"{busy_median * 1000:.0f} ms over {len(other)} runs ({busy_median / quiet_median:.2f}x)")
    print(f"upload folder checked: {upload_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
