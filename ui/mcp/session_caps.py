"""How many MCP sessions (2025 protocol clients: `initialize` opens one, `Mcp-Session-Id` names it) one visitor
holds open at once.

Why: the SDK's session manager caps open sessions server-wide (`max_sessions`) and refuses new ones at the cap;
an idle session lives up to `session_idle_timeout` (up to 30 minutes here). Opening one is a single cheap POST, so
one stranger looping over `initialize` would fill the cap and lock every other MCP client out for that long.
Counted per visitor (ui/web/rate_limit.py `visitor_of`: the address, as for runs), in-flight openings included.
"""
from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any

#: One visitor's open MCP sessions at most (a client holds one; a few for retries and parallel clients).
MAX_SESSIONS_PER_VISITOR = 16

TOO_MANY = ("Too many open MCP sessions from your address ({cap}): close ones you no longer use (HTTP DELETE "
            "with their Mcp-Session-Id), or wait for idle ones to expire.")


class SessionCaps:
    """The session ids each visitor opened, pruned against the sessions the SDK still holds."""

    def __init__(self, live: Callable[[], Any], cap: int = MAX_SESSIONS_PER_VISITOR) -> None:
        self._live = live  # the SDK's open sessions (a container of their ids)
        self.cap = cap
        self._opened: dict[str, set[str]] = {}
        self._opening: dict[str, int] = {}
        self._lock = threading.Lock()

    def claim(self, visitor: str) -> bool:
        """Room for one more session of `visitor` (then `release` it once its opening request is answered)."""
        live = self._live()
        with self._lock:
            for key in [k for k, ids in self._opened.items() if k == visitor or len(self._opened) > 1024]:
                ids = {i for i in self._opened[key] if i in live}
                if ids:
                    self._opened[key] = ids
                else:
                    del self._opened[key]
            held = len(self._opened.get(visitor, ())) + self._opening.get(visitor, 0)
            if held >= self.cap:
                return False
            self._opening[visitor] = self._opening.get(visitor, 0) + 1
            return True

    def release(self, visitor: str, session_id: str | None) -> None:
        """The opening request of a claimed place is answered: `session_id` is the session it opened, if any."""
        with self._lock:
            left = self._opening.get(visitor, 0) - 1
            if left > 0:
                self._opening[visitor] = left
            else:
                self._opening.pop(visitor, None)
            if session_id:
                self._opened.setdefault(visitor, set()).add(session_id)

    def recording(self, send: Callable[[dict[str, Any]], Awaitable[None]], found: list[str]) -> Callable[
            [dict[str, Any]], Awaitable[None]]:
        """`send` that notes in `found` the session id the response names (its Mcp-Session-Id header)."""
        async def wrapped(message: dict[str, Any]) -> None:
            if message.get("type") == "http.response.start":
                for name, value in message.get("headers") or []:
                    if name.lower() == b"mcp-session-id":
                        found.append(value.decode("latin-1"))
            await send(message)
        return wrapped
