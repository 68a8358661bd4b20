"""A visitor's request bodies, as an attacker sends them: every route but Gradio's own upload route is held to the
request cap, and the upload route holds no part of a form in memory past a small size.

Found by the round-3 attack: the cap exempted any path *ending* in `/upload`, and Gradio's API routes take the
endpoint's name from the path (`/gradio_api/run/{api_name}`, `/call/...`, `/api/...`), parsing the whole JSON
body before they find there is no such endpoint: `POST /gradio_api/run/upload` skipped the cap. And Gradio's
upload route keeps a form part that is not a file (no `filename`) in memory whole, however large."""
from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from ui.web.body_limit import BodyLimitMiddleware

CAP = 2 * 2**20


class _Reader:
    """An app that keeps the whole body, as Gradio's API routes do with their JSON."""

    def __init__(self) -> None:
        self.kept = 0

    async def __call__(self, scope: dict, receive, send) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ConnectionResetError("client left")
            self.kept += len(message.get("body", b""))
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def _post(path: str, total: int, root_path: str = "") -> tuple[int, int]:
    """POST `total` bytes without a length to `path` through the cap; (status answered, bytes the app kept)."""
    inner, pulled, sent = _Reader(), 0, []

    async def receive() -> dict:
        nonlocal pulled
        size = min(65536, total - pulled)
        pulled += size
        return {"type": "http.request", "body": b"x" * size, "more_body": pulled < total}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": root_path + path, "root_path": root_path, "headers": []}
    asyncio.run(BodyLimitMiddleware(inner, max_bytes=CAP)(scope, receive, send))
    return next(m["status"] for m in sent if m["type"] == "http.response.start"), inner.kept


@pytest.mark.parametrize("path", ["/gradio_api/run/upload", "/gradio_api/run/upload/", "/gradio_api/call/upload",
                                  "/gradio_api/call/v2/upload", "/gradio_api/api/upload", "/upload",
                                  "/gradio_api/queue/upload", "/gradio_api/file=upload"])
def test_only_gradios_upload_route_itself_is_left_to_its_own_limits(path: str) -> None:
    status, kept = _post(path, 3 * CAP)
    assert status == 413 and kept <= CAP, f"{path}: {status}, {kept} bytes kept"


def test_the_upload_route_is_left_to_its_own_limits_also_under_a_root_path() -> None:
    assert _post("/gradio_api/upload", 3 * CAP) == (200, 3 * CAP)
    assert _post("/gradio_api/upload", 3 * CAP, root_path="/deck") == (200, 3 * CAP)
    assert _post("/gradio_api/run/upload", 3 * CAP, root_path="/deck")[0] == 413


def _peak_mb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) // 1024


def _send(url: str, head: str, body_parts, total: int) -> str:
    host, port = urlsplit(url).hostname, urlsplit(url).port
    with socket.create_connection((host, port), timeout=60) as sock:
        sock.sendall((head + f"Content-Length: {total}\r\n\r\n").encode())
        try:
            for piece in body_parts:
                sock.sendall(piece)
        except OSError:
            pass  # the server answered and closed while the rest was on its way
        return sock.recv(65536).decode(errors="replace")


def test_the_served_app_keeps_neither_an_api_body_named_upload_nor_a_large_form_field(tmp_path: Path) -> None:
    from ui_testlib import RUNNING, code_reply, run_app, write_transcript

    transcript = write_transcript(tmp_path / "t.json", [code_reply("done", "final_answer('ok')")])
    data = tmp_path / "data"
    data.mkdir()
    size = 60 * 2**20
    with run_app(transcript, data) as url:
        pid = RUNNING[url].pid
        before = _peak_mb(pid)
        # An API call whose endpoint name is "upload": a JSON body Gradio parses whole before it looks the name up.
        text = b"x" * 2**20
        parts = [b'{"data": ["'] + [text] * (size // len(text)) + [b'"]}']
        answer = _send(url, "POST /gradio_api/run/upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n",
                       parts, sum(map(len, parts)))
        assert answer.startswith("HTTP/1.1 413"), answer[:300]
        # The upload route itself, with a form part that is not a file: Gradio would keep it in memory whole.
        boundary = b"agentdeckattack"
        parts = [b"--" + boundary + b'\r\nContent-Disposition: form-data; name="note"\r\n\r\n'] \
            + [text] * (size // len(text)) + [b"\r\n--" + boundary + b"--\r\n"]
        answer = _send(url, "POST /gradio_api/upload HTTP/1.1\r\nHost: x\r\n"
                            f"Content-Type: multipart/form-data; boundary={boundary.decode()}\r\n",
                       parts, sum(map(len, parts)))
        assert answer.startswith("HTTP/1.1 413"), answer[:300]
        grew = _peak_mb(pid) - before
    assert grew < 30, f"the app's peak memory grew by {grew} MB"


def test_the_route_left_out_is_the_one_gradio_serves_uploads_on() -> None:
    from gradio.route_utils import API_PREFIX

    from ui.web.body_limit import UPLOAD_ROUTE

    assert UPLOAD_ROUTE == f"{API_PREFIX}/upload"
