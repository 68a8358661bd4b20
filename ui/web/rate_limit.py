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
from ui.web.hf_login_env import on_a_space

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
    """X-Forwarded-For is the visitor's address only behind a proxy that sets it: a real Space's (SYSTEM=spaces,
    as Gradio decides it; SPACE_ID alone is only a name an image carries, also run elsewhere), or the operator's
    own when AGENTDECK_TRUST_FORWARDED=1. Anywhere else anyone can write it and get a fresh limit per request."""
    from ui.config.current import current_settings

    return on_a_space() or current_settings().trust_forwarded


def visitor_of(request: Any) -> str:
    """The visitor's address: behind a trusted proxy, the right-most X-Forwarded-For hop (the one that proxy
    appended: the hops left of it are whatever the client sent), else the connection's peer. A hop that is not
    an IP address (`host:port`, a name, an IPv6 zone `%eth0`, garbage) falls back to the peer: each different
    string would otherwise count as a visitor of its own. An IPv6 address counts as its /64 network."""
    if trusts_forwarded_header():
        hop = parsed_address(_last_forwarded_hop(getattr(request, "headers", None)))
        if hop is not None:
            return address_key(str(hop))
    client = getattr(request, "client", None)
    return address_key(str(getattr(client, "host", "") or "unknown")[:64])


def _last_forwarded_hop(headers: Any) -> str:
    """The last hop of the last X-Forwarded-For line (a proxy may add a line of its own after the client's)."""
    if headers is None:
        return ""
    if hasattr(headers, "getlist"):
        lines = headers.getlist("x-forwarded-for")
    elif hasattr(headers, "get"):
        lines = [headers.get("x-forwarded-for", "")]
    else:
        return ""
    return str(lines[-1] if lines else "").split(",")[-1].strip()


def parsed_address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """`text` as a plain IP address (brackets around IPv6 allowed), or None: no port, no zone, no name."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if not text or len(text) > 45 or "%" in text:
        return None
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


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


def stop_uvicorn_trusting_loopback_proxies(env: dict[str, str] | None = None) -> None:
    """Uvicorn (which Gradio serves with) rewrites the connection's peer from X-Forwarded-For whenever the peer is
    127.0.0.1 or ::1 (its FORWARDED_ALLOW_IPS default), taking a `host:port` or `%zone` value as it comes: a
    visitor on this machine, or any visitor through a local proxy, named their own "peer" before `visitor_of`
    saw it, and the peer is what an unparseable forwarded hop falls back to. So uvicorn trusts no one and
    `visitor_of` alone reads the header; left alone on a real Space (its proxy is Hugging Face's) and when the
    operator set FORWARDED_ALLOW_IPS. Called before the server starts (uvicorn reads the variable then)."""
    target = os.environ if env is None else env
    if "FORWARDED_ALLOW_IPS" not in target and not on_a_space(target):
        target["FORWARDED_ALLOW_IPS"] = ""  # no address is trusted: the peer stays the socket's
