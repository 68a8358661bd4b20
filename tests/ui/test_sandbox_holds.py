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


def test_a_hold_is_renewed_while_held_and_refuses_a_second_taker(store: Any) -> None:
    first = Hold(store, "sbx", ttl_s=0.6)
    first.take()
    with pytest.raises(SandboxHeldElsewhere, match="open elsewhere"):
        Hold(store, "sbx", ttl_s=0.6).take()
    # The process's renewer keeps it past several expiries with no step in between.
    deadline = threading.Event()
    deadline.wait(2.0)  # three expiries of idle time, which the renewer must cover (a duration, not a sync)
    with pytest.raises(SandboxHeldElsewhere):
        Hold(store, "sbx", ttl_s=0.6).take()
    first.release()
    Hold(store, "sbx", ttl_s=0.6).take()
