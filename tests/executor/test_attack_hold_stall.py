"""Attack on the sandbox holds (issue 28): a replica whose renewal reply comes back late must not count its claim
as fresh from the reply's arrival. The store set the claim's expiry when it applied the renewal; a replica that
stalls after that (a long GC pause, a slow network back from Redis) and then dates its confirmation from the
reply believes it has half an expiry left (`Hold.current` then skips the store), while the claim has expired and
another replica holds the sandbox: both drive it."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from agents.executor import holds
from agents.executor.holds import Hold, MemoryHolds


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


class SlowReplies(MemoryHolds):
    """The store applies each operation at once; the reply reaches the replica `delay_s` later."""

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self.clock, self.delay_s = clock, 0.0

    def lease_take(self, name: str, holder: str, ttl_s: float) -> bool:
        done = super().lease_take(name, holder, ttl_s)
        self.clock.now += self.delay_s
        return done

    def lease_renew(self, name: str, holder: str, ttl_s: float) -> bool:
        done = super().lease_renew(name, holder, ttl_s)
        self.clock.now += self.delay_s
        return done


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(holds, "time", SimpleNamespace(monotonic=fake.monotonic, sleep=__import__("time").sleep))
    return fake


@pytest.mark.parametrize("late", ["take", "renew"])
def test_attack_a_late_reply_does_not_let_two_replicas_hold_one_sandbox(clock: Clock, late: str) -> None:
    store = SlowReplies(clock)
    first = Hold(store, "sbx-1", ttl_s=60.0)
    if late == "take":
        store.delay_s = 40.0  # the claim was made at t0 (expires t0+60); the reply arrives at t0+40
        first.take()
    else:
        first.take()
        clock.now += 25.0
        store.delay_s = 40.0  # renewed at t0+25 (expires t0+85); the reply arrives at t0+65
        assert first.renew()
    store.delay_s = 0.0
    clock.now += 21.0  # past the claim's expiry in the store
    second = Hold(store, "sbx-1", ttl_s=60.0)
    try:
        second.take()  # the claim expired: the other replica takes the sandbox, as it may
        assert not first.current(), "the first replica still believes it holds the sandbox another holds now"
    finally:
        second.release()
        first.release()
