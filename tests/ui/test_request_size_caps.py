"""What a visitor sends is capped in size: request bodies, form parts and messages, on the served app."""
from __future__ import annotations

from pathlib import Path

import pytest


class BodyReader:
    """An app that keeps the whole body before answering, as Gradio does with an event's JSON."""

    def __init__(self) -> None:
        self.kept = 0
        self.called = False

    async def __call__(self, scope: dict, receive, send) -> None:
        self.called = True
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ConnectionResetError("client left")  # Starlette raises ClientDisconnect here
            body += message.get("body", b"")
            self.kept = len(body)
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def _send_body(app, headers: list[tuple[bytes, bytes]], total: int, chunk: int = 65536) -> tuple[list[dict], int]:
    """POST `total` bytes in chunks through `app`; returns what it answered and how many bytes were pulled."""
    import asyncio

    sent, pulled = [], 0

    async def receive() -> dict:
        nonlocal pulled
        size = min(chunk, total - pulled)
        pulled += size
        return {"type": "http.request", "body": b"x" * size, "more_body": pulled < total}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/gradio_api/queue/join", "headers": headers}
    asyncio.run(app(scope, receive, send))
    return sent, pulled


def test_an_80_mb_body_is_refused_before_the_app_keeps_it() -> None:
    """Gradio reads an event's body whole before any handler sees it: an 80 MB message took the app's memory from
    468 to 836 MB. With a length it is refused unread; without one (chunked) it is cut off at the cap."""
    from ui.web.body_limit import BodyLimitMiddleware

    cap, total = 2 * 2**20, 80 * 2**20
    inner = BodyReader()
    answer, pulled = _send_body(BodyLimitMiddleware(inner, max_bytes=cap),
                                [(b"content-length", str(total).encode())], total)
    assert answer[0]["status"] == 413 and b"too large" in answer[1]["body"] and b"2.0 MB" in answer[1]["body"]
    assert not inner.called and pulled == 0

    inner = BodyReader()
    answer, pulled = _send_body(BodyLimitMiddleware(inner, max_bytes=cap), [], total)  # no length: chunked
    assert [m["status"] for m in answer if m["type"] == "http.response.start"] == [413]  # the app's 500 is not sent
    assert b"too large" in answer[1]["body"]
    assert inner.kept <= cap and pulled <= cap + 65536  # the rest was never read

    inner = BodyReader()
    answer, _ = _send_body(BodyLimitMiddleware(inner, max_bytes=cap), [], cap)  # at the cap: passes
    assert answer[0]["status"] == 200 and inner.kept == cap


def test_the_body_cap_leaves_room_for_the_longest_message_and_is_on_the_served_app(tmp_path: Path) -> None:
    from ui.server import launch_kwargs
    from ui.settings import AppConfig
    from ui.web.body_limit import BodyLimitMiddleware

    config = AppConfig(model="replay:x.json", data_dir=tmp_path, max_message_chars=1_000_000, max_request_mb=1)
    assert config.max_request_bytes >= 4 * 1_000_000
    layers = {m.cls: m.kwargs for m in launch_kwargs(config)["app_kwargs"]["middleware"]}
    assert layers[BodyLimitMiddleware] == {"max_bytes": config.max_request_bytes}


def test_a_message_past_its_character_cap_is_refused_and_nothing_of_it_is_kept(tmp_path: Path,
                                                                               monkeypatch) -> None:
    import gradio as gr
    from ui_testlib import Req, code_reply, write_transcript
    from ui_testlib import form as settings_form

    from ui.app import AgentDeckApp
    from ui.settings import AppConfig

    monkeypatch.setenv("AGENTDECK_SECRET", "s" * 40)
    transcript = write_transcript(tmp_path / "t.json", [code_reply("done", "final_answer('ok')")])
    config = AppConfig(model=f"replay:{transcript}", data_dir=tmp_path / "data", authorized_imports=(),
                       max_message_chars=1000)
    app = AgentDeckApp(config)
    try:
        with pytest.raises(gr.Error, match="too long: 1,001 characters.*at most 1,000"):
            list(app.run({"text": "x" * 1001, "files": []}, Req("tab"), **settings_form(config.model)))
        session = app.registry.peek("tab")
        assert session is None or (not session.running and not session.record.transcript.roots)
        list(app.run({"text": "x" * 1000, "files": []}, Req("tab"), **settings_form(config.model)))
        assert app.registry.peek("tab").record.transcript.roots  # at the cap it runs
    finally:
        app.registry.shutdown()


@pytest.mark.slow
def test_the_served_app_refuses_an_80_mb_message_without_its_memory_growing_by_it(tmp_path: Path) -> None:
    import socket
    from urllib.parse import urlsplit

    from ui_testlib import RUNNING, code_reply, run_app, write_transcript

    def peak_mb(pid: int) -> int:
        with open(f"/proc/{pid}/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) // 1024

    transcript = write_transcript(tmp_path / "t.json", [code_reply("done", "final_answer('ok')")])
    data = tmp_path / "data"
    data.mkdir()
    with run_app(transcript, data) as url:
        pid = RUNNING[url].pid
        before = peak_mb(pid)
        host, port = urlsplit(url).hostname, urlsplit(url).port
        text = "x" * (80 * 2**20)
        body = ('{"data": [{"text": "' + text + '", "files": []}], "fn_index": 0, "session_hash": "abc"}').encode()
        for chunked in (False, True):
            with socket.create_connection((host, port), timeout=60) as sock:
                head = "POST /gradio_api/queue/join HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                head += "Transfer-Encoding: chunked\r\n\r\n" if chunked else f"Content-Length: {len(body)}\r\n\r\n"
                sock.sendall(head.encode())
                try:
                    for start in range(0, len(body), 1 << 20):
                        piece = body[start:start + (1 << 20)]
                        sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
                    if chunked:
                        sock.sendall(b"0\r\n\r\n")
                except OSError:
                    pass  # the server answered and closed while the rest was on its way
                answer = sock.recv(65536).decode(errors="replace")
            assert answer.startswith("HTTP/1.1 413") and "too large" in answer, answer[:300]
        grew = peak_mb(pid) - before
    assert grew < 40, f"the app's peak memory grew by {grew} MB"
