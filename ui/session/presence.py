"""Which sessions have a page open: browsers hold Gradio's heartbeat stream, API clients never do.

Why: Gradio unloads a session only when its heartbeat stream closes, so a client of the HTTP API (which
never opens one) would keep its sandbox for the whole idle time-out; a hundred such clients fill the
server. The middleware notes heartbeat streams as they open and close; the session registry reaps
sessions without a page within minutes of their last activity.
"""
from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any

from ui.shared.state import SharedState

HEARTBEAT_MARK = "/heartbeat/"
#: How long a page counted in the shared state stays counted without a change (a replica that died mid-stream).
SHARED_PAGE_TTL_S = 3600.0


class PagePresence:
    def __init__(self) -> None:
        self._lock = threading.Condition()  # notified when a stream closes (`wait_gone`)
        self._open: dict[str, int] = {}
        self._shared: SharedState | None = None

    def share(self, state: SharedState) -> None:
        """Also count pages in the shared state (several replicas: ui/shared/state.py), so a replica sees a page
        another replica holds. This replica's own pages are still known here first (and `wait_gone` waits on
        them only)."""
        self._shared = state

    def opened(self, session_hash: str) -> None:
        with self._lock:
            self._open[session_hash] = self._open.get(session_hash, 0) + 1
        if self._shared is not None:
            self._shared.count_add(f"page:{session_hash}", 1, SHARED_PAGE_TTL_S)

    def closed(self, session_hash: str) -> None:
        if self._shared is not None:
            self._shared.count_add(f"page:{session_hash}", -1, SHARED_PAGE_TTL_S)
        with self._lock:
            left = self._open.get(session_hash, 0) - 1
            if left > 0:
                self._open[session_hash] = left
            else:
                self._open.pop(session_hash, None)
            self._lock.notify_all()

    def has_page(self, session_hash: str) -> bool:
        with self._lock:
            if session_hash in self._open:
                return True
        return self._shared is not None and self._shared.count_get(f"page:{session_hash}") > 0

    def wait_gone(self, session_hash: str, timeout: float) -> bool:
        """Wait until no page holds the session: True then, False if one still does after `timeout` seconds.

        Why: a tab closed a moment ago is still present until the server sees its heartbeat stream close (its
        unload handlers have run by then), so another tab's click can arrive first."""
        with self._lock:
            return self._lock.wait_for(lambda: session_hash not in self._open, timeout)


PRESENCE = PagePresence()


class PresenceMiddleware:
    """Counts open heartbeat streams per session hash (ASGI; every other request passes untouched)."""

    def __init__(self, app: Callable[..., Awaitable[None]], presence: PagePresence = PRESENCE) -> None:
        self.app = app
        self.presence = presence

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope.get("type") == "http" else ""
        index = path.find(HEARTBEAT_MARK)
        if index < 0:
            await self.app(scope, receive, send)
            return
        session_hash = path[index + len(HEARTBEAT_MARK):].strip("/")[:128]
        self.presence.opened(session_hash)
        try:
            await self.app(scope, receive, send)
        finally:
            self.presence.closed(session_hash)
