"""A per-visitor limit on how many runs start per minute (a sliding window per address).

Why: every run costs the server a sandbox's CPU and the operator's model budget; one visitor looping
over the HTTP API must not take the server from everyone else.
"""
from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ui.shared.state import MemoryState, SharedState

WINDOW_S = 60.0
#: A run's place among the visitor's runs at once is given back after this long at most (a replica that died).
RUNNING_TTL_S = 3 * 3600.0


class RateLimitedError(Exception):
    """Too many runs from one visitor; the message says how long to wait."""


class RunRateLimiter:
    """The counts live in a `SharedState` (ui/shared/state.py): this process's memory by default, Redis with
    several replicas, so a visitor's limits do not multiply with the replicas."""

    def __init__(self, per_minute: int, at_once: int = 2, max_visitors: int = 10000,
                 state: SharedState | None = None) -> None:
        self.per_minute = per_minute
        self.at_once = at_once  # runs one visitor may have streaming at the same time
        self.max_visitors = max_visitors
        self.state: SharedState = state if state is not None else MemoryState(max_entries=max_visitors)

    @contextmanager
    def running(self, visitor: str) -> Iterator[None]:
        """Hold one of the visitor's concurrent-run places while a run streams (RateLimitedError if none)."""
        if not self.state.slot_take(f"running:{visitor}", self.at_once, RUNNING_TTL_S):
            raise RateLimitedError(f"Too many runs at once: this server runs {self.at_once} at a time for each "
                                   "visitor. Wait for one to finish.")
        try:
            yield
        finally:
            self.state.slot_release(f"running:{visitor}")

    def check(self, visitor: str, now: float | None = None) -> None:
        """Count one run for `visitor`, or raise RateLimitedError if it has used up its minute."""
        wait = self.state.window_take(f"runs:{visitor}", self.per_minute, WINDOW_S, now=now)
        if wait > 0:
            raise RateLimitedError(f"Too many runs: this server allows {self.per_minute} per minute for each "
                                   f"visitor. Try again in {max(1, round(wait))} s.")


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
