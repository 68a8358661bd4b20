"""Password sign-in (AGENTDECK_USERNAME / AGENTDECK_PASSWORD): repeated wrong passwords slow down, then lock out.

Why: Gradio's /login route checks every password it is sent, at once; 40 guesses took 0.1 s. Three counters,
each over the last WINDOW_S, each answering "not before" (an attempt before then gets 429 without its password
being checked, even the right one, with when to retry):

- one visitor (address) on one account: 3 wrong passwords free, then 1, 2, 4 ... 64 s between attempts, and
  after 10 the pair is locked out for the whole window (15 minutes);
- one visitor on any account (so spraying names from one address does not dodge the pair's limit): the same with
  10 free, then 1 ... 128 s, and a lockout after 18;
- one account from anywhere (many addresses, each under its own limits): a slowdown only, never a lockout: after
  10 wrong passwords in the window, 1, 2, 4, 8, then at most 10 s between attempts. A lockout here would let
  anyone lock the owner out for good by sending a wrong password now and then; the slowdown caps a distributed
  guesser at one guess per 10 s, and a visitor that signed in to the account before (its address, in the last
  30 days) is not slowed by it at all, so the owner gets in while strangers are being slowed down.

Every attempt let through is counted as a failure before its password is checked (parallel requests cannot all
pass one free place) and taken back if it succeeds.
"""
from __future__ import annotations

import json
import math
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.requests import Request

from ui.web.rate_limit import visitor_of

WINDOW_S = 900.0  # failures older than this are forgotten; also the length of a lockout
KNOWN_FOR_S = 30 * 24 * 3600.0  # how long a visitor that signed in to an account skips the account's slowdown
MAX_KEYS = 10_000  # per counter: visitors, pairs, accounts remembered
MAX_BODY = 64 * 1024  # a sign-in form is a name and a password


@dataclass(frozen=True)
class Ladder:
    """Seconds to wait after `failures` recent failures: none for the first `free`, then doubling from `base_s`,
    capped at `cap_s`; from `lock_after` failures on, `cap_s` (the lockout)."""
    free: int
    lock_after: int
    cap_s: float
    base_s: float = 1.0

    def wait(self, failures: int) -> float:
        if failures < self.free:
            return 0.0
        if failures >= self.lock_after:
            return self.cap_s
        return min(self.cap_s, self.base_s * 2 ** (failures - self.free))


PAIR = Ladder(free=3, lock_after=10, cap_s=WINDOW_S)
VISITOR = Ladder(free=10, lock_after=18, cap_s=WINDOW_S)
ACCOUNT = Ladder(free=10, lock_after=10**9, cap_s=10.0)  # a slowdown, never a lockout


class _Failures:
    """Recent failure times per key (bounded: keys, and entries per key)."""

    def __init__(self, ladder: Ladder) -> None:
        self.ladder = ladder
        self._times: dict[str, deque[float]] = {}

    def not_before(self, key: str, now: float) -> float:
        times = self._times.get(key)
        if not times:
            return 0.0
        while times and now - times[0] >= WINDOW_S:
            times.popleft()
        if not times:
            del self._times[key]
            return 0.0
        return times[-1] + self.ladder.wait(len(times))

    def add(self, key: str, now: float) -> None:
        times = self._times.pop(key, None) or deque(maxlen=min(self.ladder.lock_after + 8, 1000))
        times.append(now)
        self._times[key] = times  # re-inserted: the most recent key last
        if len(self._times) > MAX_KEYS:
            for stale in [k for k, v in self._times.items() if not v or now - v[-1] >= WINDOW_S]:
                del self._times[stale]
            while len(self._times) > MAX_KEYS:  # the keys failing longest ago go first
                del self._times[next(iter(self._times))]

    def take_back(self, key: str, at: float) -> None:
        times = self._times.get(key)
        if times and at in times:
            times.remove(at)

    def clear(self, key: str) -> None:
        self._times.pop(key, None)


@dataclass
class Refusal:
    wait_s: float
    message: str


@dataclass
class LoginThrottle:
    """The three counters and the accounts' known visitors; `clock` is injectable for tests."""
    clock: Callable[[], float] = time.time
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _pairs: _Failures = field(default_factory=lambda: _Failures(PAIR))
    _visitors: _Failures = field(default_factory=lambda: _Failures(VISITOR))
    _accounts: _Failures = field(default_factory=lambda: _Failures(ACCOUNT))
    _known: dict[str, dict[str, float]] = field(default_factory=dict)

    def attempt(self, visitor: str, account: str) -> Refusal | float:
        """A Refusal (wait and message) or the attempt's time, counted as a failure until `succeeded`."""
        now = self.clock()
        pair = f"{visitor}\n{account}"
        with self._lock:
            own = max(self._pairs.not_before(pair, now), self._visitors.not_before(visitor, now))
            if own > now:
                return Refusal(own - now, _message(own - now, now,
                               "Too many wrong passwords from your address: sign-in is paused here."))
            known = self._known.get(account, {}).get(visitor)
            if known is None or now - known >= KNOWN_FOR_S:
                shared = self._accounts.not_before(account, now)
                if shared > now:
                    return Refusal(shared - now, _message(shared - now, now,
                                   "Too many wrong passwords for this account lately: its sign-in is slowed down."))
            for table, key in ((self._pairs, pair), (self._visitors, visitor), (self._accounts, account)):
                table.add(key, now)
            return now

    def succeeded(self, visitor: str, account: str, at: float) -> None:
        """The right password: the visitor's own failures are forgiven, this attempt is no failure of the
        account's, and the visitor is known to the account from now on."""
        with self._lock:
            self._pairs.clear(f"{visitor}\n{account}")
            self._visitors.clear(visitor)
            self._accounts.take_back(account, at)
            known = self._known.pop(account, {})
            known[visitor] = at
            while len(known) > 50:
                del known[next(iter(known))]
            self._known[account] = known
            while len(self._known) > MAX_KEYS:
                del self._known[next(iter(self._known))]


def _message(wait_s: float, now: float, why: str) -> str:
    seconds = max(1, math.ceil(wait_s))
    when = datetime.fromtimestamp(now, UTC) + timedelta(seconds=seconds)
    span = f"{seconds} s" if seconds < 120 else f"{round(seconds / 60)} minutes"
    return f"{why} Try again in {span} (after {when:%H:%M:%S} UTC)."


class LoginThrottleMiddleware:
    """A plain ASGI middleware in front of Gradio's POST /login: reads the form (both encodings, as Gradio does),
    asks the throttle, and passes the request on unchanged or answers 429 with Retry-After and the reason."""

    def __init__(self, app: Callable[..., Awaitable[None]], throttle: LoginThrottle | None = None) -> None:
        self.app = app
        self.throttle = throttle or LoginThrottle()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if not (scope.get("type") == "http" and scope.get("method") == "POST"
                and str(scope.get("path", "")).rstrip("/").endswith("/login")):
            await self.app(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message.get("type") != "http.request":
                return  # the client left
            body += message.get("body", b"")
            if len(body) > MAX_BODY:
                await _answer(send, 413, "A sign-in form is a name and a password: this one is too large.")
                return
            if not message.get("more_body"):
                break
        account = await _username(scope, bytes(body))
        if account is None:  # Gradio's own parser, with wider limits, could read a name this one did not count
            await _answer(send, 400, "A sign-in form is a username and a password: this one could not be read.")
            return
        visitor = visitor_of(Request(scope))
        verdict = self.throttle.attempt(visitor, account)
        if isinstance(verdict, Refusal):
            await _answer(send, 429, verdict.message, retry_after=max(1, math.ceil(verdict.wait_s)))
            return
        sent = False
        status = 0

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        async def watch(message: dict[str, Any]) -> None:
            nonlocal status
            if message.get("type") == "http.response.start":
                status = int(message.get("status", 0))
            await send(message)

        await self.app(scope, replay, watch)
        if status == 200:
            self.throttle.succeeded(visitor, account, verdict)


async def _username(scope: dict[str, Any], body: bytes) -> str | None:
    """The form's username as Gradio reads it (stripped; "" when there is none), or None when the form does not
    parse here (past 20 fields, a file part, broken encoding) or its username is a file: Gradio reads forms with
    wider limits (1,000 fields and files), so such a form must not reach it, or its guess would be counted under
    another account's name than the one it tried."""
    done = False

    async def once() -> dict[str, Any]:
        nonlocal done
        if done:
            return {"type": "http.disconnect"}
        done = True
        return {"type": "http.request", "body": body, "more_body": False}

    try:
        form = await Request(scope, once).form(max_files=0, max_fields=20)
        value = form.get("username")
    except Exception:
        return None
    if value is None:
        return ""
    return value.strip()[:200] if isinstance(value, str) else None


async def _answer(send: Any, status: int, detail: str, retry_after: int | None = None) -> None:
    headers = [(b"content-type", b"application/json")]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps({"detail": detail}).encode()})
