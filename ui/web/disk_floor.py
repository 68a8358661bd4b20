"""Uploads are refused while the disk holding Gradio's upload folder is below the server's floor
(AGENTDECK_MIN_FREE_MB, as runs are: ui/web/run_gate.py).

Why: Gradio stores every upload before any handler of ours sees it, and its upload route needs no run, so a
visitor looping over it could fill the disk the sandboxes' temp folders and the published files share. Each
upload is still limited in size by Gradio; this keeps their sum off the last of the disk.
"""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from agents.executor.worker_watch import server_disk_short
from ui.web.gradio_compat import upload_folder

UPLOAD_ROUTE = "/upload"


class DiskFloorMiddleware:
    """A plain ASGI middleware: a POST to Gradio's upload route gets 507 while the disk is below the floor."""

    def __init__(self, app: Callable[..., Awaitable[None]], min_free_mb: int = 0) -> None:
        self.app = app
        self.min_free_mb = min_free_mb

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if (scope.get("type") == "http" and scope.get("method") == "POST"
                and str(scope.get("path", "")).rstrip("/").endswith(UPLOAD_ROUTE)):
            short = server_disk_short([str(upload_folder())], self.min_free_mb)
            if short is not None:
                body = json.dumps({"detail": f"Uploads are paused: {short.split(';')[0]}). Try again later."})
                await send({"type": "http.response.start", "status": 507,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": body.encode()})
                return
        await self.app(scope, receive, send)
