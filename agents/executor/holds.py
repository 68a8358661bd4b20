"""Which session holds a remote sandbox, decided in one store every app replica shares (issue 28).

Why: a sandbox that outlives the app (E2B) can be attached from any replica. Two replicas attaching it at once
both took its supervisor's stream, and a replica closing its session killed the sandbox another had just
attached; the in-process "in use" check saw neither. Now a host holds its sandbox by an atomic claim with an
expiry (`take`: SET NX PX in Redis), renewed while held (each step, and every third of the expiry by one thread
of the process) and released on close or let-go. Whoever cannot take it does not attach it; a host whose claim
was lost (it expired while the replica was stalled, and another took it) drives the sandbox no more, and its
close lets the sandbox go instead of killing it (`Hold.renew` just before the kill: the kill happens only under
a claim still this host's, which no attacher can take meanwhile).

The store: the app passes its shared state (`configure_host(sandbox_holds=...)`, ui/services.py: Redis when
configured); without it, this process's memory (`MemoryHolds`), which is right for one replica.
"""
from __future__ import annotations

import logging
import secrets
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Protocol

from .errors import SandboxError

log = logging.getLogger("agents.executor")
#: A claim's life without renewal: a replica that dies frees its sandboxes within this.
HOLD_TTL_S = 60.0


class SandboxHolds(Protocol):
    """The shared store's three atomic operations (ui/shared/state.py implements them, in Redis or memory)."""

    def lease_take(self, name: str, holder: str, ttl_s: float) -> bool:
        """`holder` takes `name` if nobody holds it (or renews it if it holds it already); False if another does."""
        ...

    def lease_renew(self, name: str, holder: str, ttl_s: float) -> bool:
        """Extend `holder`'s claim on `name`; False (nothing changed) if it is not `holder`'s any more."""
        ...

    def lease_release(self, name: str, holder: str) -> bool:
        """Free `name` if `holder` still holds it (never another holder's claim)."""
        ...


class MemoryHolds:
    """The single-process default: the same operations on a dict under a lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, tuple[float, str]] = {}

    def _holder(self, name: str) -> str | None:
        entry = self._values.get(name)
        if entry is None or entry[0] <= time.monotonic():
            self._values.pop(name, None)
            return None
        return entry[1]

    def lease_take(self, name: str, holder: str, ttl_s: float) -> bool:
        with self._lock:
            if self._holder(name) not in (None, holder):
                return False
            self._values[name] = (time.monotonic() + ttl_s, holder)
            return True

    def lease_renew(self, name: str, holder: str, ttl_s: float) -> bool:
        with self._lock:
            if self._holder(name) != holder:
                return False
            self._values[name] = (time.monotonic() + ttl_s, holder)
            return True

    def lease_release(self, name: str, holder: str) -> bool:
        with self._lock:
            if self._holder(name) != holder:
                return False
            del self._values[name]
            return True


_PROCESS_HOLDS = MemoryHolds()


def configured_holds() -> SandboxHolds:
    """The store the app configured (`configure_host(sandbox_holds=...)`), else this process's memory."""
    from agents.host_settings import host_settings

    found = getattr(host_settings(), "sandbox_holds", None)
    return found if found is not None else _PROCESS_HOLDS


class SandboxHeldElsewhere(SandboxError):
    """Another session (of this replica or another) holds the sandbox: it is not attached here."""


@dataclass(eq=False)
class Hold:
    """One host's claim on one sandbox: `take` once, `renew` while it is used, `release` at close."""

    store: SandboxHolds
    sandbox: str
    ttl_s: float = HOLD_TTL_S
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    held: bool = False
    abandoned: bool = False  # tests: a replica that died stops renewing without releasing
    #: Monotonic time at which the last take or renewal the store confirmed was *asked*: the store set the
    #: expiry somewhere between asking and the reply, so a reply that came late (a stalled replica) must not
    #: make the claim look fresher than it is (two replicas would both drive the sandbox).
    renewed_at: float = 0.0

    @property
    def name(self) -> str:
        return f"sandbox-hold:{self.sandbox}"

    def take(self) -> None:
        """Claim the sandbox; `SandboxHeldElsewhere` if another session holds it."""
        asked_at = time.monotonic()  # the claim's expiry counts from no later than this (see `current`)
        try:
            taken = self.store.lease_take(self.name, self.token, self.ttl_s)
        except Exception as exc:  # the store's own error type (Redis down): the sandbox is not used unheld
            raise SandboxError(f"the sandbox {self.sandbox} could not be held: {exc}") from exc
        if not taken:
            raise SandboxHeldElsewhere(f"the sandbox {self.sandbox} cannot be attached: it is in use by another "
                                       "session (the chat is open elsewhere, maybe on another server)")
        self.held, self.renewed_at = True, asked_at
        _renewer.add(self)

    def renew(self) -> bool:
        """Extend the claim; False once it is not this host's any more (then it stays lost)."""
        if not self.held or self.abandoned:
            return False
        asked_at = time.monotonic()
        try:
            self.held = bool(self.store.lease_renew(self.name, self.token, self.ttl_s))
            if self.held:
                self.renewed_at = asked_at
        except Exception as exc:  # the store is unreachable: the claim counts as lost, nothing is killed
            log.warning("the hold on sandbox %s could not be renewed: %s", self.sandbox, exc)
            self.held = False
        return self.held

    def current(self) -> bool:
        """Whether this host may still drive the sandbox, asking the store only when the last confirmation is
        half an expiry old: a claim confirmed less than its expiry ago cannot have been taken by anyone (the
        store frees it only once it expired), so each step's send costs no round trip (`renew` otherwise)."""
        if not self.held or self.abandoned:
            return False
        return time.monotonic() - self.renewed_at < self.ttl_s / 2 or self.renew()

    def release(self) -> None:
        if self.held and not self.abandoned:
            try:
                self.store.lease_release(self.name, self.token)
            except Exception as exc:  # it expires by itself
                log.warning("the hold on sandbox %s could not be released: %s", self.sandbox, exc)
        self.held = False


class _Renewer:
    """One daemon thread of the process renewing each live hold every third of its expiry, so a session idle for
    a long time (a person thinking over a decision) keeps its sandbox. Each hold has its own schedule and a hold
    added wakes the thread: holds of different expiries (backends given their own, `hold_ttl_s`) are each renewed
    in time (a short one added while the thread slept a third of a long one's expiry ran out)."""

    def __init__(self) -> None:
        self._next: weakref.WeakKeyDictionary[Hold, float] = weakref.WeakKeyDictionary()  # monotonic renewal time
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, hold: Hold) -> None:
        with self._lock:
            self._next[hold] = time.monotonic() + hold.ttl_s / 3
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="sandbox-holds", daemon=True)
                self._thread.start()
        self._wake.set()

    def _due_in(self) -> float | None:
        """Renew the holds due; seconds until the next one is (None: no live hold left, the thread ends)."""
        with self._lock:
            live = [(h, at) for h, at in self._next.items() if h.held and not h.abandoned]
            if not live:
                self._thread = None
                return None
        for hold, at in live:
            if at <= time.monotonic():
                hold.renew()
                with self._lock:
                    self._next[hold] = time.monotonic() + hold.ttl_s / 3
        with self._lock:
            soonest = min(self._next.get(h, 0.0) for h, _ in live)
        return max(soonest - time.monotonic(), 0.01)

    def _run(self) -> None:
        while (wait := self._due_in()) is not None:
            self._wake.wait(wait)
            self._wake.clear()


_renewer = _Renewer()
