"""The operator's Prometheus metrics over HTTP from a launched app: off by default; a visitor, whatever header
they send, gets 404; the operator's token (app port) and the loopback metrics port get counters that moved."""
from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from ui_testlib import code_reply, form, free_port, run_app, write_transcript

from tests.waiting import wait_until
from ui.saved.store import new_token

TOKEN = "operator-metrics-token-0123456789"


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(text: str, name: str, **labels: str) -> float:
    return samples(text).get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_are_the_operators_only(tmp_path: Path) -> None:
    from gradio_client import Client

    reply = code_reply("Print, then answer.", "print(6 * 7)\nfinal_answer(42)")
    transcript = write_transcript(tmp_path / "t.json", [reply])
    data = tmp_path / "data"
    data.mkdir()
    port = free_port()
    env = {"AGENTDECK_METRICS_TOKEN": TOKEN, "AGENTDECK_METRICS_PORT": str(port), "AGENTDECK_RUNS_PER_MINUTE": "1"}
    with run_app(transcript, data, extra_env=env) as url:
        operator = {"Authorization": f"Bearer {TOKEN}"}
        for visitor in ({}, {"Authorization": "Bearer wrong-token-wrong-token-00"}, {"Authorization": TOKEN},
                        {"Authorization": f"Basic {TOKEN}"}, {"X-Forwarded-For": "127.0.0.1"},
                        {"Authorization": f"Bearer {TOKEN}x"}):
            status, body = get(url + "metrics", visitor)
            assert status == 404 and "agentdeck_" not in body, visitor
        status, before = get(url + "metrics", operator)
        assert status == 200 and value(before, "agentdeck_runs_total", state="success") == 0
        client = Client(url, verbose=False, download_files=False)
        client.predict({"token": new_token()}, api_name="/browser_session")  # a browser's chat: saved to disk
        client.predict({"text": "What is six times seven?", "files": []}, **form(f"replay:{transcript}"),
                       approval_mode="autonomous", api_name="/run")

        def moved() -> str | None:
            text = get(url + "metrics", operator)[1]
            done = value(text, "agentdeck_runs_total", state="success") == 1
            return text if done and value(text, "agentdeck_chat_saves_total", outcome="ok") >= 1 else None

        after = wait_until(moved, timeout=30, what="the run counted")
        assert value(after, "agentdeck_steps_total", type="action") == 1
        assert value(after, "agentdeck_model_tokens_total", direction="output") > 0
        assert value(after, "agentdeck_model_call_seconds_count") == 1
        assert value(after, "agentdeck_sandbox_runs_total", backend="local", outcome="ok") == 1
        assert value(after, "agentdeck_chat_saves_total", outcome="failed") == 0
        assert value(after, "agentdeck_sessions") >= 1
        assert value(after, "agentdeck_sandboxes", state="live") >= 1
        # A second run within the minute is refused (AGENTDECK_RUNS_PER_MINUTE=1), and counted.
        try:
            client.predict({"text": "Again?", "files": []}, **form(f"replay:{transcript}"),
                           approval_mode="autonomous", api_name="/run")
        except Exception as exc:
            assert "Too many runs" in str(exc)
        else:
            raise AssertionError("the second run was not refused")
        refused = get(url + "metrics", operator)[1]
        assert value(refused, "agentdeck_run_refusals_total", reason="rate_limit") == 1
        assert value(refused, "agentdeck_runs_total", state="success") == 1
        # The loopback metrics port serves the same figures, to anyone on this machine only (bound to 127.0.0.1).
        status, local = get(f"http://127.0.0.1:{port}/metrics")
        assert status == 200 and value(local, "agentdeck_runs_total", state="success") == 1


def test_metrics_are_off_by_default(tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "t.json", [code_reply("Answer.", "final_answer(1)")])
    data = tmp_path / "data"
    data.mkdir()
    with run_app(transcript, data) as url:
        for headers in ({}, {"Authorization": "Bearer anything-at-all-0000000"}):
            status, body = get(url + "metrics", headers)
            assert status == 404 and "agentdeck_" not in body
