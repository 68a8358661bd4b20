"""Uploads are refused while the disk holding Gradio's upload folder is below the server's floor
(AGENTDECK_MIN_FREE_MB, as runs are: ui/web/run_gate.py), and past each visitor's share of the upload route
(AGENTDECK_UPLOAD_MB_PER_HOUR).

Why: Gradio stores every upload before any handler of ours sees it, and its upload route needs no run, so a
visitor looping over it could fill the disk the sandboxes' temp folders and the published files share. Each
upload is still limited in size by Gradio; the floor keeps their sum off the last of the disk. The floor alone
would let one visitor hold the disk at it, pausing every visitor's uploads and runs for the hour stored uploads
are kept: so each visitor may store only so many bytes an hour, counted as the body arrives (a request without
a length, or with many files, is cut off at the share), and only so many files (form parts, counted by their
boundary as the body arrives): Gradio takes 1,000 files in one request and stores each in a folder of its own,
so a share of bytes spent on tiny files (a gigabyte an hour is millions of them) ran the disk out of inodes, which
no free-space floor sees.
"""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request

from agents.executor.local.worker_watch import server_disk_short
from ui.shared.state import MemoryState, SharedState
from ui.web.body_limit import is_upload_route
from ui.web.gradio_compat import upload_folder
from ui.web.rate_limit import visitor_of

WINDOW_S = 3600.0  # as long as Gradio keeps a stored upload (ui/layout.py: delete_cache)
FILES_PER_HOUR = 1000  # form parts one visitor may send to the upload route an hour (each a file and a folder)
MAX_VISITORS = 10_000


class UploadShares:
    """Bytes each visitor sent to the upload route in the last hour (a sliding window in a `SharedState`: this
    process's memory, visitors bounded, or Redis with several replicas)."""

    def __init__(self, bytes_per_hour: int, state: SharedState | None = None, kind: str = "upload") -> None:
        self.bytes_per_hour = bytes_per_hour  # or files, for kind "upload-files": the window counts either
        self.state: SharedState = state if state is not None else MemoryState(max_entries=MAX_VISITORS)
        self.kind = kind

    def left(self, visitor: str, now: float | None = None) -> int:
        """Bytes `visitor` may still send this hour."""
        return self.bytes_per_hour - int(self.state.window_used(f"{self.kind}:{visitor}", WINDOW_S, now=now))

    def add(self, visitor: str, n: int, now: float | None = None) -> None:
        if n > 0:
            self.state.window_add(f"{self.kind}:{visitor}", n, WINDOW_S, now=now)


class DiskFloorMiddleware:
    """A plain ASGI middleware for POSTs to Gradio's upload route: 507 while the disk is below the floor, 429 for
    a visitor past its share (and a body that goes past it is cut off: the route sees the client leave)."""

    def __init__(self, app: Callable[..., Awaitable[None]], min_free_mb: int = 0,
                 upload_bytes_per_hour: int = 0, state: SharedState | None = None,
                 files_per_hour: int = FILES_PER_HOUR) -> None:
        self.app = app
        self.min_free_mb = min_free_mb
        self.shares = UploadShares(upload_bytes_per_hour, state) if upload_bytes_per_hour > 0 else None
        self.files = UploadShares(files_per_hour, state, kind="upload-files") if files_per_hour > 0 else None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if not (scope.get("type") == "http" and scope.get("method") == "POST"
                and is_upload_route(scope)):
            await self.app(scope, receive, send)
            return
        short = server_disk_short([str(upload_folder())], self.min_free_mb)
        if short is not None:
            await _refuse(send, 507, f"Uploads are paused: {short.split(';')[0]}). Try again later.")
            return
        shares, files = self.shares, self.files
        if shares is None and files is None:
            await self.app(scope, receive, send)
            return
        visitor = visitor_of(Request(scope))
        headers = dict(scope.get("headers") or [])
        left = shares.left(visitor) if shares is not None else 1 << 62
        parts_left = files.left(visitor) if files is not None else 1 << 62
        length = headers.get(b"content-length", b"")
        if left <= 0 or length.isdigit() and int(length) > left:
            per_hour = shares.bytes_per_hour if shares is not None else 0
            await _refuse(send, 429, f"Too many uploads: this server stores {per_hour // 2**20} MB of "
                                     "uploads an hour for each visitor. Try again later.")
            return
        if parts_left <= 0:
            await _refuse(send, 429, self._files_message())
            return
        parts = PartCounter(headers.get(b"content-type", b""))
        cut = False

        async def counted() -> dict[str, Any]:
            nonlocal left, parts_left, cut
            if cut:
                return {"type": "http.disconnect"}
            message = await receive()
            body = message.get("body", b"") if message.get("type") == "http.request" else b""
            if shares is not None:
                shares.add(visitor, len(body))
                left -= len(body)
            new_parts = parts.feed(body)
            if files is not None and new_parts:
                files.add(visitor, new_parts)
                parts_left -= new_parts
            if left < 0 or parts_left < 0:  # past a share mid-body: the route stops reading, drops what it stored
                cut = True
                return {"type": "http.disconnect"}
            return message

        await self.app(scope, counted, send)

    def _files_message(self) -> str:
        per_hour = self.files.bytes_per_hour if self.files is not None else 0
        return (f"Too many uploads: this server stores {per_hour} files an hour for each visitor. Try again "
                "later.")


class PartCounter:
    """Counts the parts of a multipart body as it streams: each opens with `--<boundary>` (which no part may
    hold, or the body would not parse), a delimiter split between two chunks included. A body that is not
    multipart counts as one part (Gradio's upload route refuses it unread)."""

    def __init__(self, content_type: bytes) -> None:
        boundary = _boundary(content_type)
        self.delimiter = b"--" + boundary if boundary else b""
        self._tail = b""
        self._counted_other = False

    def feed(self, chunk: bytes) -> int:
        if not self.delimiter:
            if self._counted_other:
                return 0
            self._counted_other = True
            return 1
        data = self._tail + chunk
        keep = len(self.delimiter) - 1  # too short to hold a whole delimiter: none is counted twice
        self._tail = data[-keep:] if len(data) > keep else data
        return data.count(self.delimiter)


def _boundary(content_type: bytes) -> bytes:
    """The multipart boundary named in a Content-Type header (quoted or not), or b"" if none."""
    text = content_type.decode("latin-1")
    kind, _, params = text.partition(";")
    if kind.strip().lower() != "multipart/form-data":
        return b""
    for param in params.split(";"):
        name, _, value = param.strip().partition("=")
        if name.strip().lower() == "boundary":
            return value.strip().strip('"').encode("latin-1")[:200]
    return b""


async def _refuse(send: Any, status: int, detail: str) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": json.dumps({"detail": detail}).encode()})
