"""The shared disk's limits: no run or upload below the free-space floor, and no visitor can hold the disk at
that floor alone (uploads per hour, the disk their chats take)."""
from __future__ import annotations

from pathlib import Path

import pytest
from ui_testlib import form

from ui.session.registry import SessionRegistry


def test_no_run_starts_on_a_disk_below_its_floor_and_sandboxes_get_the_floor(tmp_path: Path, monkeypatch) -> None:
    """Saved chats keep their workspaces (up to max_disk_mb each), so chat after chat could fill the disk every
    visitor shares: below AGENTDECK_MIN_FREE_MB no run starts (before its uploads are taken in), and each code
    agent's sandbox stops writing at the same floor."""
    import gradio as gr
    from ui_testlib import code_reply, write_transcript

    from agents.executor.local.worker_watch import free_mb
    from ui.agent_factory import build_agent
    from ui.settings import AppConfig, RunSettings
    from ui.web.run_gate import RunGate

    full = AppConfig(model="embedded:smollm2", data_dir=tmp_path / "data", min_free_mb=free_mb(str(tmp_path)) + 10**6)
    gate = RunGate(full, registry=None, streamer=None)  # type: ignore[arg-type]
    with pytest.raises(gr.Error, match="disk is almost full"):
        gate.admit(None, session=None)  # type: ignore[arg-type]  # refused before the registry is asked
    transcript = write_transcript(tmp_path / "t.json", [code_reply("done", "final_answer(1)")])
    config = AppConfig(model=f"replay:{transcript}", data_dir=tmp_path / "data", min_free_mb=512)
    agent = build_agent(RunSettings(model=config.model), tmp_path / "ws", config)
    assert agent.sandbox_limits.min_free_mb == 512
    monkeypatch.setenv("AGENTDECK_MIN_FREE_MB", "100")
    assert AppConfig.from_env(tmp_path).min_free_mb == 100


@pytest.mark.slow
def test_a_full_disk_pauses_uploads_and_runs_of_the_real_app(tmp_path: Path) -> None:
    """Gradio's upload route needs no run: below the floor it answers 507 before storing anything, and a run
    sent through the API is refused; the data folder gets no chat."""
    import requests
    from gradio_client import Client
    from ui_testlib import code_reply, run_app, write_transcript

    from agents.executor.local.worker_watch import free_mb

    transcript = write_transcript(tmp_path / "t.json", [code_reply("done", "final_answer('ok')")])
    data = tmp_path / "data"
    data.mkdir()
    floor = str(free_mb(str(tmp_path)) + 10**6)
    with run_app(transcript, data, extra_env={"AGENTDECK_MIN_FREE_MB": floor}) as url:
        upload = requests.post(url + "gradio_api/upload", files={"files": ("a.csv", b"a,b\n1,2\n")}, timeout=30)
        assert upload.status_code == 507 and "disk is almost full" in upload.text
        client = Client(url, verbose=False, download_files=False)
        with pytest.raises(Exception, match="disk is almost full"):
            client.predict({"text": "hi", "files": []}, **form(f"replay:{transcript}", imports="pandas"),
                           approval_mode="autonomous", api_name="/run")
    assert not list((data / "owners").glob("*/*/meta.json"))


def test_one_visitor_cannot_hold_the_upload_folder_at_the_disk_floor(monkeypatch) -> None:
    """Gradio's upload route needs no run and keeps what it stores for an hour: below the floor every visitor's
    uploads (and runs) pause, so one visitor looping over it could keep the disk there and pause everyone. Each
    visitor may store AGENTDECK_UPLOAD_MB_PER_HOUR: past it, 429; a body without a length that goes past it is
    cut off as it arrives; other visitors go on."""
    import asyncio

    from ui.web.disk_floor import DiskFloorMiddleware

    monkeypatch.setenv("AGENTDECK_TRUST_FORWARDED", "1")
    stored: dict[str, int] = {}

    async def upload_route(scope, receive, send) -> None:
        who = dict(scope["headers"])[b"x-forwarded-for"].decode()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            stored[who] = stored.get(who, 0) + len(message.get("body", b""))
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"[]"})

    guarded = DiskFloorMiddleware(upload_route, min_free_mb=0, upload_bytes_per_hour=1000)

    def post(who: str, chunks: list[int], length: bool = True) -> int:
        headers = [(b"x-forwarded-for", who.encode())]
        if length:
            headers.append((b"content-length", str(sum(chunks)).encode()))
        scope = {"type": "http", "method": "POST", "path": "/gradio_api/upload", "headers": headers,
                 "client": ("127.0.0.1", 5000)}
        messages = [{"type": "http.request", "body": b"x" * n, "more_body": i < len(chunks) - 1}
                    for i, n in enumerate(chunks)]
        sent: list[dict] = []

        async def receive() -> dict:
            return messages.pop(0) if messages else {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)

        asyncio.run(guarded(scope, receive, send))
        return sent[0]["status"]

    assert post("198.51.100.7", [600]) == 200
    assert post("198.51.100.7", [600]) == 429  # its length says it would go past the share
    post("198.51.100.7", [300, 300, 300], length=False)  # no length: cut off once past it
    assert stored["198.51.100.7"] <= 1000 + 300
    assert post("198.51.100.7", [10]) == 429
    assert post("203.0.113.5", [600]) == 200  # another visitor's share is its own


def test_a_visitor_whose_chats_take_their_disk_share_starts_no_run(tmp_path: Path) -> None:
    """Saved chats keep their workspaces: a visitor starting chat after chat, each run writing up to its
    sandbox's max_disk_mb, brought the shared disk to its floor, below which no one's run starts. Past
    AGENTDECK_VISITOR_DISK_MB of its chats' folders, that visitor's runs are refused (deleting a chat frees it);
    others go on."""
    import gradio as gr

    from ui.settings import AppConfig
    from ui.web.run_gate import RunGate

    config = AppConfig(model="embedded:smollm2", data_dir=tmp_path / "data", min_free_mb=0, visitor_disk_mb=1,
                       runs_per_minute=100)
    registry = SessionRegistry(tmp_path / "data", agent_factory=lambda s, w: None)
    gate = RunGate(config, registry, streamer=None)  # type: ignore[arg-type]
    visitor = type("R", (), {"headers": {}, "client": type("C", (), {"host": "198.51.100.7"})()})()
    other = type("R", (), {"headers": {}, "client": type("C", (), {"host": "203.0.113.5"})()})()
    first = registry.get("first")
    gate.admit(visitor, first)
    first.record.root.mkdir(parents=True, exist_ok=True)
    (first.record.root / "big.bin").write_bytes(b"x" * 2 * 2**20)  # what its run wrote
    registry.close("first")  # the tab goes: its chat stays on disk
    with pytest.raises(gr.Error, match="take 2 MB or more"):
        gate.admit(visitor, registry.get("second"))
    gate.admit(other, registry.get("theirs"))
    (first.record.root / "big.bin").unlink()  # the chat deleted
    second = registry.get("second")
    gate.admit(visitor, second)
    shown = second.record.workspace / "chart.png"
    shown.parent.mkdir(parents=True, exist_ok=True)
    shown.write_bytes(b"x" * 2**20)
    second.record.publish(shown)  # its copy for the browser counts too
    shown.unlink()
    with pytest.raises(gr.Error, match="take 1 MB or more"):
        gate.admit(visitor, registry.get("third"))
    second.record.remove_files()  # the session removed: its copies are gone
    gate.admit(visitor, registry.get("third"))
