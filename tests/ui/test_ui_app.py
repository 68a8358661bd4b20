"""Drive the running app over its HTTP interface with gradio_client (replay model, offline)."""
from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from gradio_client import Client, handle_file
from ui_testlib import PENGUINS, code_reply, run_app, write_transcript

from tests.waiting import wait_until
from ui.chat.render_execution import LOGS_LABEL

pytestmark = pytest.mark.slow


def text_of(message: dict) -> str:
    parts = message.get("content") or []
    if isinstance(parts, str):
        return parts
    return "\n".join(p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text")


def files_of(message: dict) -> list[dict]:
    parts = message.get("content") or []
    if not isinstance(parts, list):
        return []
    return [p["file"] for p in parts if isinstance(p, dict) and p.get("type") == "file"]


def title(message: dict) -> str:
    return (message.get("metadata") or {}).get("title") or ""


def run(client: Client, text: str, files: list[Path] = ()) -> tuple[list[tuple], list[float]]:
    """Submit a message and collect every streamed update (and when it arrived)."""
    job = client.submit({"text": text, "files": [handle_file(str(f)) for f in files]}, api_name="/run")
    updates, arrivals = [], []
    for update in job:
        updates.append(update)
        arrivals.append(time.time())
    job.result(timeout=60)
    return updates, arrivals


def latest_files(updates: list[tuple]) -> list[dict]:
    """The files panel as last sent (updates that left it unchanged carry a no-op update dict)."""
    value = None
    for update in updates:
        if not isinstance(update[2], dict):
            value = update[2]
    return value or []


def chat_text(chat: list[dict]) -> str:
    return "\n".join(title(m) + "\n" + text_of(m) for m in chat)


def test_scripted_analysis_run_streams_in_order_and_follow_up(analysis_app: str, tmp_path: Path) -> None:
    client = Client(analysis_app, verbose=False, download_files=False)
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    updates, _ = run(client, "Explore the penguins", [PENGUINS, empty])
    chat, _, _, status, _ = updates[-1]
    files = latest_files(updates)

    # The steps were seen streaming: each step pending before done, steps in order, final answer last.
    seen: list[tuple[str, str]] = []
    for update in updates:
        for message in update[0]:
            meta = message.get("metadata") or {}
            key = (meta.get("title") or "", meta.get("status") or "")
            if key[0].startswith("Step") and key not in seen:
                seen.append(key)
    assert seen.index(("Step 1", "pending")) < seen.index(("Step 1", "done")) < seen.index(("Step 2", "pending"))
    # Step 3 only calls final_answer: its start and end may arrive in the same update.
    assert seen.index(("Step 2", "done")) < seen.index(("Step 3", "done"))
    clock = [e for update in updates for e in update[4]["events"]]
    assert [e[0] for e in clock if e[0] == "step_started"] == ["step_started"] * 3
    assert [e[1] for e in clock if e[0] == "step_finished"] == [1, 2, 3]

    # The upload was previewed, the bad file got a clear message, and the agent's code read the file.
    text = chat_text(chat)
    assert "Added to the workspace: penguins.csv" in text and "344 rows × 8 columns" in text
    assert "`empty.csv` is empty (0 bytes)" in text and "The run continues without it" in text
    assert "shape (344, 8)" in text
    step1 = next(m for m in chat if title(m) == "Step 1")
    assert step1["metadata"]["status"] == "done" and step1["metadata"]["duration"] >= 0
    assert "tokens" in step1["metadata"]["log"] and "```python" in text_of(step1)

    # The chart arrived as an image message, fetchable over HTTP.
    images = [f for m in chat for f in files_of(m) if f["path"].endswith(".png")]
    assert len(images) == 1
    with urllib.request.urlopen(images[0]["url"], timeout=10) as response:
        assert response.read(8) == b"\x89PNG\r\n\x1a\n"
    # The files panel lists the upload, the chart and the CSV the code wrote, with download URLs.
    names = sorted(Path(f["path"]).name for f in files)
    assert names == ["flipper_vs_mass.png", "penguins.csv", "species_summary.csv"]  # charts listed too
    summary_url = next(f["url"] for f in files if f["path"].endswith("species_summary.csv"))
    with urllib.request.urlopen(summary_url, timeout=10) as response:
        assert b"Adelie" in response.read()
    final = chat[-1]
    assert "metadata" not in final or not title(final)
    assert "344 penguins" in text_of(final)
    assert status.startswith("<small>success · 3 steps")

    # A follow-up continues the same memory and sandbox (`df` is still loaded).
    updates, _ = run(client, "now split it by island")
    chat = updates[-1][0]
    text = chat_text(chat)
    assert "islands {'Biscoe': 168, 'Dream': 124, 'Torgersen': 52}" in text
    assert text_of(chat[-1]).startswith("By island:")
    assert "344 penguins" in text  # the earlier conversation is still there

    # New chat: empty chat, empty workspace, a fresh agent (the script starts again).
    cleared = client.predict(api_name="/new_chat")
    assert cleared[0] == [] and cleared[2] is None
    updates, _ = run(client, "again", [PENGUINS])
    assert "344 penguins" in text_of(updates[-1][0][-1])


def test_two_clients_never_see_each_other(analysis_app: str, tmp_path: Path) -> None:
    own = tmp_path / "only_for_b.txt"
    own.write_text("secret notes of client B\n")
    results: dict[str, Any] = {}

    def session(name: str, files: list[Path]) -> None:
        client = Client(analysis_app, verbose=False, download_files=False)
        results[name] = run(client, f"task from client {name}", files)

    threads = [threading.Thread(target=session, args=("A", [PENGUINS])),
               threading.Thread(target=session, args=("B", [PENGUINS, own]))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert set(results) == {"A", "B"}
    for me, other in (("A", "B"), ("B", "A")):
        updates, _ = results[me]
        for chat, _, _files, _, _ in updates:
            text = chat_text(chat)
            assert f"client {other}" not in text
            if me == "A":
                assert "only_for_b" not in text and "secret notes" not in text
        final_chat = updates[-1][0]
        assert f"task from client {me}" in chat_text(final_chat)
        assert "344 penguins" in text_of(final_chat[-1])
    a_files = {f["path"] for f in latest_files(results["A"][0])}
    b_files = {f["path"] for f in latest_files(results["B"][0])}
    # Each session's files are published under its own unguessable folder: B's own file never shows up for A,
    # and not even the same penguins.csv bytes share a URL.
    assert any(p.endswith("only_for_b.txt") for p in b_files) and not any("only_for_b" in p for p in a_files)
    assert len(a_files) == len(b_files) - 1 == 3  # penguins.csv, the chart, species_summary.csv (+ B's notes)


def test_files_reach_the_browser_only_as_published_copies(tmp_path: Path) -> None:
    """The browser gets published copies of a session's files; the workspaces themselves are not served, and a
    page the agent wrote is downloaded, not shown on the app's origin (where its script would run)."""
    script = [code_reply("Write a report and a chart.",
                         "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 2, 3])\n"
                         "fig.savefig('line.png')\nplt.close(fig)\n"
                         "open('report.html', 'w').write('<script>alert(1)</script>')\nprint('written')"),
              code_reply("Done.", "final_answer('done')")]
    data = tmp_path / "data"
    data.mkdir()
    with run_app(write_transcript(tmp_path / "files.json", script), data) as url:
        client = Client(url, verbose=False, download_files=False)
        updates, _ = run(client, "write files")
        chat, files = updates[-1][0], latest_files(updates)
        image = next(f for m in chat for f in files_of(m) if f["path"].endswith("line.png"))
        report = next(f for f in files if f["path"].endswith("report.html"))
        with urllib.request.urlopen(image["url"], timeout=10) as response:
            assert response.headers["Content-Type"] == "image/png" and response.read(4) == b"\x89PNG"
        with urllib.request.urlopen(report["url"], timeout=10) as response:
            assert response.headers["Content-Disposition"].startswith("attachment")
        assert "/agentdeck/" in image["url"] and "/agentdeck/" in report["url"]
        # The same files where they really are, in the session's workspace: refused.
        written = [p for p in data.rglob("*") if p.name in ("line.png", "report.html") and "workspace" in p.parts]
        assert len(written) == 2
        for path in written:
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(f"{url}gradio_api/file={path}", timeout=10)
            assert refused.value.code == 403


def test_stop_interrupts_running_code_and_session_stays_usable(slow_app: str) -> None:
    client = Client(slow_app, verbose=False, download_files=False)
    job = client.submit({"text": "take your time", "files": []}, api_name="/run")

    def code_running() -> bool:  # the code printed before its long sleep (in its running step, after the label)
        outputs = job.outputs()
        return bool(outputs) and "sleeping" in "".join(text_of(m).partition(LOGS_LABEL)[2] for m in outputs[-1][0]
                                                       if title(m).startswith("Step"))

    wait_until(code_running, what="the slow step's code to run")
    stopped_at = time.time()
    client.predict(api_name="/stop")
    chat = job.result(timeout=20)[0]
    assert time.time() - stopped_at < 5, "Stop should end the run at once, not after the 30 s sleep"
    text = chat_text(chat)
    # What the code printed before Stop is shown (under its stopped step), and nothing after it (the code's own
    # `print('woke up')` is in the chat: a printed line is one that ends a fenced block).
    assert "Stopped" in text and "sleeping\n```" in text and "woke up\n```" not in text
    assert all((m.get("metadata") or {}).get("status") != "pending" for m in chat)
    updates, _ = run(client, "are you still there?")
    assert text_of(updates[-1][0][-1]) == "still usable"


def test_gradio_client_downloads_the_charts_of_a_run(tmp_path: Path) -> None:
    from ui_testlib import ANALYSIS_SCRIPT

    transcript = write_transcript(tmp_path / "t.json", ANALYSIS_SCRIPT)
    data = tmp_path / "data"
    data.mkdir()
    with run_app(transcript, data) as url:
        client = Client(url, verbose=False, download_files=str(tmp_path / "downloads"))
        chat = client.predict({"text": "Explore the penguins", "files": [handle_file(str(PENGUINS))]},
                              api_name="/run")[0]
        charts = [Path(part["file"]) for m in chat for part in (m.get("content") or [])
                  if isinstance(part, dict) and part.get("type") == "file" and str(part.get("file")).endswith(".png")]
        assert charts, "the run's chart was not in the answer"
        assert charts[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        # The rewrite serves only the app's own file route: a URL-wrapped path outside it is still refused.
        probe = f"{url}gradio_api/file=http://elsewhere/gradio_api/file=/etc/passwd"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(probe, timeout=10)
        assert refused.value.code in (403, 404)
