"""Attack: filling the server's disk with files, not bytes, through Gradio's upload route.

Gradio takes up to 1,000 files in one upload request and stores each in a folder of its own; the per-visitor share
of the route counted bytes only, so a gigabyte an hour spent on 100-byte files is millions of files and folders:
the disk runs out of inodes, which no free-space floor sees, and every write on it fails. Each visitor may send
only so many form parts an hour, counted by their boundary as the body streams (however it is cut in chunks)."""
from __future__ import annotations

import asyncio

from ui.web.disk_floor import DiskFloorMiddleware, PartCounter

BOUNDARY = b"x7Gq"


def _many_files(n: int) -> bytes:
    part = b"--" + BOUNDARY + b'\r\nContent-Disposition: form-data; name="files"; filename="f%d.txt"\r\n\r\nhi\r\n'
    return b"".join(part.replace(b"%d", str(i).encode()) for i in range(n)) + b"--" + BOUNDARY + b"--\r\n"


def test_parts_are_counted_however_the_body_is_cut() -> None:
    body = _many_files(50)
    for size in (1, 3, len(BOUNDARY) + 1, 7, 64, len(body)):
        counter = PartCounter(b"multipart/form-data; boundary=" + BOUNDARY)
        assert sum(counter.feed(body[i:i + size]) for i in range(0, len(body), size)) == 51  # 50 + the closing one
    quoted = PartCounter(b'multipart/form-data; boundary="' + BOUNDARY + b'"')
    assert quoted.feed(body) == 51


def test_one_visitor_cannot_store_more_than_its_files_an_hour(monkeypatch) -> None:
    monkeypatch.setenv("AGENTDECK_TRUST_FORWARDED", "1")
    kept: dict[str, int] = {}

    async def upload_route(scope, receive, send) -> None:
        who = dict(scope["headers"])[b"x-forwarded-for"].decode()
        data = b""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            data += message.get("body", b"")
            if not message.get("more_body"):
                break
        kept[who] = kept.get(who, 0) + data.count(b'filename="')
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"[]"})

    guarded = DiskFloorMiddleware(upload_route, min_free_mb=0, upload_bytes_per_hour=10 * 2**20)

    def post(who: str, body: bytes) -> int:
        headers = [(b"x-forwarded-for", who.encode()),
                   (b"content-type", b"multipart/form-data; boundary=" + BOUNDARY)]
        scope = {"type": "http", "method": "POST", "path": "/gradio_api/upload", "headers": headers,
                 "client": ("127.0.0.1", 5000)}
        chunks = [body[i:i + 4096] for i in range(0, len(body), 4096)]
        messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
                    for i, c in enumerate(chunks)]
        sent: list[dict] = []

        async def receive() -> dict:
            return messages.pop(0) if messages else {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)

        asyncio.run(guarded(scope, receive, send))
        return sent[0]["status"]

    attacker = "198.51.100.7"
    for _ in range(3):  # 3,000 tiny files in three requests: far below the byte share
        post(attacker, _many_files(1000))
    assert kept[attacker] <= 1000 + 4096 // 60, f"{kept[attacker]} files stored for one visitor in an hour"
    assert post(attacker, _many_files(1)) == 429
    assert post("203.0.113.8", _many_files(10)) == 200 and kept["203.0.113.8"] == 10  # others go on
