"""Request bodies are held to a size (AGENTDECK_MAX_REQUEST_MB) before the app keeps them in memory.

Why here: Gradio reads each event's body whole and parses it (a chat message arrives as JSON in
`/gradio_api/queue/join`) before any handler of ours can look at it, so an 80 MB message took the app from 468 to
836 MB however short the handler's own cap (ui/app.py: AGENTDECK_MAX_MESSAGE_CHARS). A body that announces more is
refused at once; one without a length (chunked) is counted as it arrives and refused where it goes past the cap,
the rest never read. Gradio's upload route is left to its own limits: it streams files to disk, each held to
AGENTDECK_MAX_UPLOAD_MB by Gradio and their sum to each visitor's share (ui/web/disk_floor.py), and a form part
that is not a file to a small size (ui/web/gradio_compat.py: cap_upload_fields). Only that route's own path is
left out: Gradio's API routes take the endpoint's name from the path (`/gradio_api/run/{api_name}`, `/call/`,
`/api/`) and parse the whole body before they look the name up, so "any path ending in /upload" let
`POST /gradio_api/run/upload` through with a body of any size.
"""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

UPLOAD_ROUTE = "/gradio_api/upload"  # Gradio's API_PREFIX + its upload route (tests/ui/test_attack_request_bodies.py)


def is_upload_route(scope: dict[str, Any]) -> bool:
    """Whether the request goes to Gradio's upload route itself: its exact path (a trailing slash aside, which
    Gradio redirects unread), below the app's root path when it is served under one."""
    path = str(scope.get("path", ""))
    root = str(scope.get("root_path", "") or "").rstrip("/")
    if root and path.startswith(root + "/"):
        path = path[len(root):]
    return path.rstrip("/") == UPLOAD_ROUTE


class BodyLimitMiddleware:
    """A plain ASGI middleware: 413 with a clear message for a request body past `max_bytes`."""

    def __init__(self, app: Callable[..., Awaitable[None]], max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def message(self) -> str:
        return (f"The request is too large: this server takes at most {self.max_bytes / 2**20:.1f} MB in one "
                "request (files go as uploads). Send less at a time.")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or is_upload_route(scope):
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length", b"")
        if length.strip().isdigit() and int(length) > self.max_bytes:
            await refuse(send, 413, self.message())
            return
        received, refused, started = 0, False, False

        async def counted() -> dict[str, Any]:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message.get("type") == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:  # the rest is never read: the connection closes after the answer
                    refused = True
                    if not started:
                        await refuse(send, 413, self.message())
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: dict[str, Any]) -> None:
            nonlocal started
            if refused:
                return  # the visitor has the refusal; what the app says about the lost client goes nowhere
            started = True
            await send(message)

        try:
            await self.app(scope, counted, guarded_send)
        except Exception:
            if not refused:
                raise  # the app's own error; after a refusal, only the app noticing its client left


async def refuse(send: Any, status: int, detail: str) -> None:
    """Answer `status` with `{"detail": ...}` (as FastAPI words its errors, so gradio_client shows it)."""
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": json.dumps({"detail": detail}).encode()})
