"""A per-visitor limit on how many runs start per minute (a sliding window per address).

Why: every run costs the server a sandbox's CPU and the operator's model budget; one visitor looping
over the HTTP API must not take the server from everyone else.
"""
from __future__ import annotations

import ipaddress
import os
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

WINDOW_S = 60.0


class RateLimitedError(Exception):
    """Too many runs from one visitor; the message says how long to wait."""


class RunRateLimiter:
    def __init__(self, per_minute: int, at_once: int = 2, max_visitors: int = 10000) -> None:
        self.per_minute = per_minute
        self.at_once = at_once  # runs one visitor may have streaming at the same time
        self.max_visitors = max_visitors
        self._lock = threading.Lock()
        self._starts: dict[str, deque[float]] = {}
        self._running: dict[str, int] = {}

    @contextmanager
    def running(self, visitor: str) -> Iterator[None]:
        """Hold one of the visitor's concurrent-run places while a run streams (RateLimitedError if none)."""
        with self._lock:
            if self._running.get(visitor, 0) >= self.at_once:
                raise RateLimitedError(f"Too many runs at once: this server runs {self.at_once} at a time for each "
                                       "visitor. Wait for one to finish.")
            self._running[visitor] = self._running.get(visitor, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                left = self._running.get(visitor, 1) - 1
                if left > 0:
                    self._running[visitor] = left
                else:
                    self._running.pop(visitor, None)

    def check(self, visitor: str, now: float | None = None) -> None:
        """Count one run for `visitor`, or raise RateLimitedError if it has used up its minute."""
        now = time.monotonic() if now is None else now
        with self._lock:
            starts = self._starts.setdefault(visitor, deque())
            while starts and now - starts[0] >= WINDOW_S:
                starts.popleft()
            if len(starts) >= self.per_minute:
                wait = WINDOW_S - (now - starts[0])
                raise RateLimitedError(f"Too many runs: this server allows {self.per_minute} per minute for each "
                                       f"visitor. Try again in {max(1, round(wait))} s.")
            starts.append(now)
            if len(self._starts) > self.max_visitors:  # forget the quietest visitors first
                for key in [k for k, v in self._starts.items() if not v or now - v[-1] >= WINDOW_S]:
                    del self._starts[key]


def trusts_forwarded_header() -> bool:
    """X-Forwarded-For is the visitor's address only behind a proxy that sets it (a Space's, or the operator's
    own when AGENTDECK_TRUST_FORWARDED=1); otherwise anyone can write it and get a fresh limit per request."""
    return bool(os.environ.get("SPACE_ID")) or os.environ.get("AGENTDECK_TRUST_FORWARDED", "") == "1"


def visitor_of(request: Any) -> str:
    """The visitor's address: behind a trusted proxy, the last X-Forwarded-For hop (added by the proxy, not
    the client); else the connection's peer. An IPv6 address counts as its /64 network."""
    if trusts_forwarded_header():
        headers = getattr(request, "headers", None) or {}
        forwarded = headers.get("x-forwarded-for", "") if hasattr(headers, "get") else ""
        if forwarded:
            return address_key(forwarded.split(",")[-1].strip()[:64])
    client = getattr(request, "client", None)
    return address_key(str(getattr(client, "host", "") or "unknown")[:64])


def address_key(address: str) -> str:
    """The key a visitor's limits are counted under. Why /64 for IPv6: one subscriber line or one cloud machine
    is given a whole /64 (2**64 addresses), so counting single addresses would give such a visitor a fresh
    limit per request."""
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)
