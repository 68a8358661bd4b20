"""The holds that make a remote sandbox one session's among all replicas (agents/executor/holds.py): the shared
state's atomic take / renew / release, in memory and in a real redis-server, as two replicas racing would use
them."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from shared_servers import redis_url  # noqa: F401 (fixture)

from agents.executor.holds import Hold, MemoryHolds, SandboxHeldElsewhere
from tests.waiting import wait_until
from ui.shared.state import MemoryState


@pytest.fixture(params=["holds", "memory", "redis"])
def store(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "holds":
        yield MemoryHolds()
    elif request.param == "memory":
        yield MemoryState()
    else:
        from ui.shared.state_redis import RedisState

        state = RedisState(request.getfixturevalue("redis_url"))
        state.client.flushdb()
        yield state


def test_only_one_of_many_racing_takers_holds_a_sandbox(store: Any) -> None:
    start = threading.Barrier(8)
    won: list[str] = []

    def take(name: str) -> None:
        start.wait(10)
        if store.lease_take("sandbox-hold:sbx", name, 30.0):
            won.append(name)

    threads = [threading.Thread(target=take, args=(f"replica-{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(won) == 1
    assert store.lease_take("sandbox-hold:sbx", won[0], 30.0)  # the holder may take it again (a renewal)


def test_only_the_holder_renews_or_releases_and_an_expired_hold_is_free(store: Any) -> None:
    assert store.lease_take("sandbox-hold:sbx", "a", 0.3)
    assert not store.lease_renew("sandbox-hold:sbx", "b", 30.0)
    assert not store.lease_release("sandbox-hold:sbx", "b")
    assert not store.lease_take("sandbox-hold:sbx", "b", 30.0)
    wait_until(lambda: store.lease_take("sandbox-hold:sbx", "b", 30.0), 10, "a's hold to run out")
    assert not store.lease_renew("sandbox-hold:sbx", "a", 30.0)  # a's is lost: it must let the sandbox go
    assert store.lease_release("sandbox-hold:sbx", "b")
    assert store.lease_take("sandbox-hold:sbx", "a", 30.0)


class Counting:
    """The store, counting the renewals asked of it."""

    def __init__(self, store: Any) -> None:
        self.store, self.renewals = store, 0

    def lease_take(self, name: str, holder: str, ttl_s: float) -> bool:
        return bool(self.store.lease_take(name, holder, ttl_s))

    def lease_renew(self, name: str, holder: str, ttl_s: float) -> bool:
        self.renewals += 1
        return bool(self.store.lease_renew(name, holder, ttl_s))

    def lease_release(self, name: str, holder: str) -> bool:
        return bool(self.store.lease_release(name, holder))


def test_a_hold_is_renewed_while_held_and_refuses_a_second_taker(store: Any) -> None:
    counting = Counting(store)
    first = Hold(counting, "sbx", ttl_s=0.6)
    first.take()
    with pytest.raises(SandboxHeldElsewhere, match="open elsewhere"):
        Hold(store, "sbx", ttl_s=0.6).take()
    # The process's renewer keeps it with no step in between: three renewals span more than one expiry.
    wait_until(lambda: counting.renewals >= 3, 10, "the renewer to renew the hold three times")
    with pytest.raises(SandboxHeldElsewhere):
        Hold(store, "sbx", ttl_s=0.6).take()
    first.release()
    Hold(store, "sbx", ttl_s=0.6).take()


def test_a_step_asks_the_store_only_when_the_hold_was_last_confirmed_half_an_expiry_ago(store: Any) -> None:
    """`current` (each E2B send): no round trip for a claim confirmed less than half its expiry ago (nobody can
    have taken it); an older one is renewed, and a lost one is found lost."""
    counting = Counting(store)
    hold = Hold(counting, "sbx", ttl_s=30.0)
    hold.take()
    assert all(hold.current() for _ in range(5)) and counting.renewals == 0
    hold.renewed_at -= 20.0  # confirmed 20 s ago: past half the expiry
    assert hold.current() and counting.renewals == 1
    assert counting.lease_release(hold.name, hold.token) and store.lease_take(hold.name, "another", 30.0)
    hold.renewed_at -= 20.0
    assert not hold.current() and not hold.current() and counting.renewals == 2  # lost stays lost


def test_a_short_hold_taken_while_a_long_one_is_held_is_renewed_in_time(store: Any) -> None:
    """Backends given their own expiry (`hold_ttl_s`) share the process's renewer: a short hold taken while the
    renewer slept a third of a long one's expiry ran out (another replica could then take its sandbox)."""
    long = Hold(store, "sbx-long", ttl_s=60.0)
    long.take()
    counting = Counting(store)
    short = Hold(counting, "sbx-short", ttl_s=0.6)
    try:
        short.take()
        wait_until(lambda: counting.renewals >= 3, 10, "the renewer to renew the short hold three times")
        with pytest.raises(SandboxHeldElsewhere):
            Hold(store, "sbx-short", ttl_s=0.6).take()
    finally:
        short.release()
        long.release()
