"""Response headers that keep agent output from phishing: the page's Content-Security-Policy.

Why a header besides the chat's sanitiser (ui/chat/safe_markdown.py): it holds for every way text reaches the
page, including ones the sanitiser does not see. Images and media load only from the app itself (and
data:/blob: URLs the app makes), forms can only post to the app, inline event handlers never run, and
plugins are off. Scripts and styles are not restricted here: Gradio's page needs its own inline ones.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

CONTENT_SECURITY_POLICY = "; ".join([
    "img-src 'self' data: blob:",
    "media-src 'self' data: blob:",
    "form-action 'self'",
    "script-src-attr 'none'",
    "object-src 'none'",
    "base-uri 'self'",
    "frame-ancestors 'self' https://huggingface.co https://*.hf.space",
])
HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class SecurityHeadersMiddleware:
    """A plain ASGI middleware (streamed responses pass through untouched but for their headers)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message.get("type") == "http.response.start":
                names = {name.lower() for name, _ in message.get("headers", [])}
                message = dict(message)
                message["headers"] = list(message.get("headers", [])) + [h for h in HEADERS if h[0] not in names]
            await send(message)

        await self.app(scope, receive, send_with_headers)
