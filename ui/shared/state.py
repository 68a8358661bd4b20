"""Short-lived state every replica must see alike: leases, page presence, deleted-chat tombstones, rate windows.

Why: one process kept these in dicts. Behind a load balancer, a tab on one replica and a tab on another must
see the same lease (one tab continues a chat), a chat deleted on one replica must not be saved again by the
other, and a visitor's run and upload limits must not double with each replica. `AGENTDECK_REDIS_URL` puts them
in Redis (ui/shared/state_redis.py, each operation one atomic script); without it they stay in this process's
memory (`MemoryState`), as before.

Names are the caller's (`lease:<chat>`, `runs:<visitor>`); every entry expires (`ttl_s`), so a replica that
dies leaves nothing behind for longer than its TTL.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Protocol

#: Entries the in-memory state keeps before it forgets expired ones (and then the oldest).
MAX_ENTRIES = 100_000


class SharedStateError(Exception):
    """The shared state (Redis) cannot be reached; the message names the URL setting to check."""


class SharedState(Protocol):
    def lease_set(self, name: str, holder: str, ttl_s: float) -> None:
        """`holder` holds `name` for `ttl_s` seconds (renewed by setting it again)."""
        ...

    def lease_get(self, name: str) -> str | None: ...

    def lease_release(self, name: str, holder: str) -> bool:
        """Free `name` if `holder` still holds it (never another holder's lease)."""
        ...

    def lease_take(self, name: str, holder: str, ttl_s: float) -> bool:
        """`holder` takes `name` only if nobody else holds it (renewed if `holder` does): atomic (SET NX PX)."""
        ...

    def lease_renew(self, name: str, holder: str, ttl_s: float) -> bool:
        """Extend `holder`'s lease; False, nothing changed, when `name` is not `holder`'s any more."""
        ...

    def mark(self, name: str, ttl_s: float) -> None:
        """Remember `name` for `ttl_s` seconds (a deleted chat's tombstone)."""
        ...

    def is_marked(self, name: str) -> bool: ...

    def window_take(self, name: str, limit: float, window_s: float, amount: float = 1.0,
                    now: float | None = None) -> float:
        """Add `amount` to the sliding window if the total stays within `limit`: 0.0 then, else the seconds
        until the oldest entry leaves the window (nothing added). Atomic: racing replicas cannot both pass."""
        ...

    def window_add(self, name: str, amount: float, window_s: float, now: float | None = None) -> None: ...

    def window_used(self, name: str, window_s: float, now: float | None = None) -> float: ...

    def slot_take(self, name: str, limit: int, ttl_s: float) -> bool:
        """One more of `limit` places (runs at once), or False when all are taken."""
        ...

    def slot_release(self, name: str) -> None: ...

    def count_add(self, name: str, delta: int, ttl_s: float) -> int:
        """Add to a counter (open pages); it is gone at 0 or after `ttl_s` without a change."""
        ...

    def count_get(self, name: str) -> int: ...


class MemoryState:
    """The single-process default: the same operations on dicts under one lock, with expiry."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._values: dict[str, tuple[float, str]] = {}  # name -> (expires at, value)
        self._windows: dict[str, deque[tuple[float, float]]] = {}

    @staticmethod
    def _clock() -> float:
        return time.monotonic()

    def _get(self, name: str) -> str | None:
        entry = self._values.get(name)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            del self._values[name]
            return None
        return entry[1]

    def _set(self, name: str, value: str, ttl_s: float) -> None:
        self._values.pop(name, None)  # re-inserted last: the dict stays in order of last change
        self._values[name] = (self._clock() + ttl_s, value)
        if len(self._values) > self.max_entries:
            now = self._clock()
            for key in [k for k, (t, _) in self._values.items() if t <= now]:
                del self._values[key]
            while len(self._values) > self.max_entries:
                del self._values[next(iter(self._values))]

    def lease_set(self, name: str, holder: str, ttl_s: float) -> None:
        with self._lock:
            self._set(name, holder, ttl_s)

    def lease_get(self, name: str) -> str | None:
        with self._lock:
            return self._get(name)

    def lease_release(self, name: str, holder: str) -> bool:
        with self._lock:
            if self._get(name) != holder:
                return False
            del self._values[name]
            return True

    def lease_take(self, name: str, holder: str, ttl_s: float) -> bool:
        with self._lock:
            if self._get(name) not in (None, holder):
                return False
            self._set(name, holder, ttl_s)
            return True

    def lease_renew(self, name: str, holder: str, ttl_s: float) -> bool:
        with self._lock:
            if self._get(name) != holder:
                return False
            self._set(name, holder, ttl_s)
            return True

    def mark(self, name: str, ttl_s: float) -> None:
        with self._lock:
            self._set(name, "1", ttl_s)

    def is_marked(self, name: str) -> bool:
        with self._lock:
            return self._get(name) is not None

    def _window(self, name: str, window_s: float, now: float) -> deque[tuple[float, float]]:
        entries = self._windows.setdefault(name, deque())
        while entries and now - entries[0][0] >= window_s:
            entries.popleft()
        return entries

    def _forget_quiet_windows(self, window_s: float, now: float) -> None:
        if len(self._windows) > self.max_entries:
            for key in [k for k, v in self._windows.items() if not v or now - v[-1][0] >= window_s]:
                del self._windows[key]

    def window_take(self, name: str, limit: float, window_s: float, amount: float = 1.0,
                    now: float | None = None) -> float:
        now = self._clock() if now is None else now
        with self._lock:
            entries = self._window(name, window_s, now)
            if sum(n for _, n in entries) + amount > limit:
                return max(window_s - (now - entries[0][0]), 0.001) if entries else window_s
            entries.append((now, amount))
            self._forget_quiet_windows(window_s, now)
            return 0.0

    def window_add(self, name: str, amount: float, window_s: float, now: float | None = None) -> None:
        now = self._clock() if now is None else now
        with self._lock:
            entries = self._window(name, window_s, now)
            if entries and now - entries[-1][0] < 1.0:  # one entry a second: a long upload is not a million
                entries[-1] = (entries[-1][0], entries[-1][1] + amount)
            else:
                entries.append((now, amount))
            self._forget_quiet_windows(window_s, now)

    def window_used(self, name: str, window_s: float, now: float | None = None) -> float:
        now = self._clock() if now is None else now
        with self._lock:
            return sum(n for _, n in self._window(name, window_s, now))

    def slot_take(self, name: str, limit: int, ttl_s: float) -> bool:
        with self._lock:
            used = int(self._get(name) or 0)
            if used >= limit:
                return False
            self._set(name, str(used + 1), ttl_s)
            return True

    def slot_release(self, name: str) -> None:
        with self._lock:
            entry = self._values.get(name)
            left = int(self._get(name) or 0) - 1
            if left > 0 and entry is not None:
                self._values[name] = (entry[0], str(left))
            else:
                self._values.pop(name, None)

    def count_add(self, name: str, delta: int, ttl_s: float) -> int:
        with self._lock:
            value = int(self._get(name) or 0) + delta
            if value > 0:
                self._set(name, str(value), ttl_s)
            else:
                self._values.pop(name, None)
            return max(value, 0)

    def count_get(self, name: str) -> int:
        with self._lock:
            return int(self._get(name) or 0)
