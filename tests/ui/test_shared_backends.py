"""One contract for every backend of the shared stores (ui/shared/): the local folder, S3 (moto's server on
loopback) and fsspec for saved chats' blobs; memory and Redis (a real redis-server on loopback) for the shared
state. Each test runs against each implementation, including concurrent writers that must lose nothing."""
from __future__ import annotations

import json
import secrets
import threading
from pathlib import Path

import pytest
from shared_servers import redis_url, s3_client, s3_endpoint  # noqa: F401 (fixtures)
from waiting import wait_until

from ui.shared.blobs import ANY, MISSING, BlobStore, BlobStoreError, LocalBlobs, VersionConflict
from ui.shared.blobs_fsspec import FsspecBlobs
from ui.shared.blobs_s3 import S3Blobs
from ui.shared.choose import open_blob_store
from ui.shared.state import MemoryState, SharedState
from ui.shared.state_redis import RedisState


@pytest.fixture(params=["local", "s3", "fsspec"])
def blobs(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    if request.param == "local":
        return LocalBlobs(tmp_path)
    if request.param == "fsspec":
        return FsspecBlobs(f"memory://agentdeck-test-{secrets.token_hex(6)}/chats")
    endpoint = request.getfixturevalue("s3_endpoint")
    client = s3_client(endpoint)
    bucket = f"chats-{secrets.token_hex(6)}"
    client.create_bucket(Bucket=bucket)
    return S3Blobs(f"s3://{bucket}/agentdeck", client=client)


@pytest.fixture(params=["memory", "redis"])
def state(request: pytest.FixtureRequest) -> SharedState:
    if request.param == "memory":
        return MemoryState()
    store = RedisState(request.getfixturevalue("redis_url"))
    store.client.flushdb()
    return store


# ----- blobs --------------------------------------------------------------------------------------------------
def test_a_blob_reads_back_with_the_version_its_write_returned(blobs: BlobStore) -> None:
    assert blobs.get("owners/a/chat/meta.json") is None
    version = blobs.put("owners/a/chat/meta.json", b'{"title": "x"}')
    blob = blobs.get("owners/a/chat/meta.json")
    assert blob is not None and blob.data == b'{"title": "x"}' and blob.version == version
    assert blobs.put("owners/a/chat/meta.json", b"two", expect=version) != version
    assert blobs.get("owners/a/chat/meta.json").data == b"two"  # type: ignore[union-attr]


def test_a_write_against_a_stale_version_or_over_a_new_blob_is_refused_and_changes_nothing(blobs: BlobStore) -> None:
    first = blobs.put("k/memory.json", b"first", expect=MISSING)
    with pytest.raises(VersionConflict):
        blobs.put("k/memory.json", b"again", expect=MISSING)  # create-only: it exists
    second = blobs.put("k/memory.json", b"second", expect=first)
    with pytest.raises(VersionConflict):
        blobs.put("k/memory.json", b"lost update", expect=first)  # the writer never saw `second`
    with pytest.raises(VersionConflict):
        blobs.put("k/absent.json", b"x", expect=second)  # a version of a blob that does not exist
    assert blobs.get("k/memory.json").data == b"second"  # type: ignore[union-attr]
    assert blobs.get("k/absent.json") is None
    blobs.put("k/memory.json", b"whatever", expect=ANY)
    assert blobs.get("k/memory.json").data == b"whatever"  # type: ignore[union-attr]


def test_children_delete_and_delete_tree(blobs: BlobStore) -> None:
    for key in ("owners/o/c1/meta.json", "owners/o/c1/memory.json", "owners/o/c2/meta.json", "owners/o/current"):
        blobs.put(key, b"x")
    assert blobs.children("owners/o") == ["c1", "c2", "current"]
    assert blobs.children("owners/o/c1") == ["memory.json", "meta.json"]
    assert blobs.children("owners/nobody") == []
    blobs.delete("owners/o/current")
    blobs.delete("owners/o/current")  # deleting what is gone is fine
    blobs.delete_tree("owners/o/c1")
    assert blobs.children("owners/o") == ["c2"]
    assert blobs.get("owners/o/c1/meta.json") is None


@pytest.mark.parametrize("key", ["../secret", "/etc/passwd", "a/../../b", "a//b", "", "a/./b", "a\\b"])
def test_a_key_that_could_leave_the_store_is_refused(blobs: BlobStore, key: str) -> None:
    with pytest.raises(BlobStoreError):
        blobs.put(key, b"x")
    with pytest.raises(BlobStoreError):
        blobs.get(key)


def test_concurrent_read_modify_write_loses_no_update(blobs: BlobStore) -> None:
    """Six writers each append their own entries to one JSON list, re-reading on a conflict: every entry lands."""
    key = "owners/o/chat/memory.json"
    blobs.put(key, b"[]")
    conflicts = []

    def writer(name: str) -> None:
        for i in range(8):
            while True:
                blob = blobs.get(key)
                assert blob is not None
                try:
                    blobs.put(key, json.dumps(json.loads(blob.data) + [f"{name}-{i}"]).encode(), expect=blob.version)
                    break
                except VersionConflict:
                    conflicts.append(name)

    threads = [threading.Thread(target=writer, args=(f"w{n}",)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    final = json.loads(blobs.get(key).data)  # type: ignore[union-attr]
    assert sorted(final) == sorted(f"w{n}-{i}" for n in range(6) for i in range(8))
    assert len(final) == 48


def test_the_store_setting_picks_the_backend(tmp_path: Path) -> None:
    assert isinstance(open_blob_store("", tmp_path), LocalBlobs)
    assert open_blob_store("", tmp_path).url == str(tmp_path)
    assert isinstance(open_blob_store(f"file://{tmp_path}/x", tmp_path), LocalBlobs)
    assert isinstance(open_blob_store("memory://agentdeck-pick/x", tmp_path), FsspecBlobs)
    with pytest.raises(BlobStoreError):
        S3Blobs("s3://", client=object())


# ----- shared state -------------------------------------------------------------------------------------------
def test_a_lease_is_released_only_by_its_holder_and_expires(state: SharedState) -> None:
    assert state.lease_get("lease:c") is None
    state.lease_set("lease:c", "tab-1", 60)
    assert state.lease_get("lease:c") == "tab-1"
    assert not state.lease_release("lease:c", "tab-2")
    assert state.lease_get("lease:c") == "tab-1"
    assert state.lease_release("lease:c", "tab-1")
    assert state.lease_get("lease:c") is None
    state.lease_set("lease:short", "tab-1", 0.2)
    wait_until(lambda: state.lease_get("lease:short") is None, 10, "the lease to expire")


def test_a_tombstone_is_seen_until_it_expires(state: SharedState) -> None:
    assert not state.is_marked("deleted:o:c")
    state.mark("deleted:o:c", 60)
    state.mark("deleted:o:short", 0.2)
    assert state.is_marked("deleted:o:c") and state.is_marked("deleted:o:short")
    wait_until(lambda: not state.is_marked("deleted:o:short"), 10, "the tombstone to expire")
    assert state.is_marked("deleted:o:c")


def test_a_sliding_window_passes_up_to_its_limit_and_says_how_long_to_wait(state: SharedState) -> None:
    for t in (100.0, 110.0, 120.0):
        assert state.window_take("runs:v", 3, 60.0, now=t) == 0.0
    wait = state.window_take("runs:v", 3, 60.0, now=130.0)
    assert wait == pytest.approx(30.0)  # the entry at 100 leaves at 160
    assert state.window_used("runs:v", 60.0, now=130.0) == 3
    assert state.window_take("runs:v", 3, 60.0, now=160.5) == 0.0
    assert state.window_used("runs:v", 60.0, now=160.5) == 3
    assert state.window_take("runs:other", 3, 60.0, now=130.0) == 0.0  # windows are per name


def test_amounts_in_a_window_add_up(state: SharedState) -> None:
    state.window_add("upload:v", 1000, 3600.0, now=10.0)
    state.window_add("upload:v", 500, 3600.0, now=20.0)
    assert state.window_used("upload:v", 3600.0, now=30.0) == 1500
    assert state.window_used("upload:v", 3600.0, now=3615.0) == 500
    assert state.window_take("upload:v", 2000, 3600.0, amount=1600, now=3615.0) > 0
    assert state.window_take("upload:v", 2000, 3600.0, amount=1500, now=3615.0) == 0.0


def test_slots_and_counters(state: SharedState) -> None:
    assert state.slot_take("running:v", 2, 60) and state.slot_take("running:v", 2, 60)
    assert not state.slot_take("running:v", 2, 60)
    state.slot_release("running:v")
    assert state.slot_take("running:v", 2, 60)
    assert state.count_get("pages:s") == 0
    assert state.count_add("pages:s", 1, 60) == 1 and state.count_add("pages:s", 1, 60) == 2
    assert state.count_add("pages:s", -1, 60) == 1 and state.count_get("pages:s") == 1
    assert state.count_add("pages:s", -1, 60) == 0 and state.count_get("pages:s") == 0


def test_racing_takers_never_pass_more_than_the_limit(state: SharedState) -> None:
    passed: list[int] = []
    slots: list[bool] = []
    start = threading.Barrier(8)

    def taker(n: int) -> None:
        start.wait(10)
        for _ in range(5):
            if state.window_take("runs:race", 10, 60.0) == 0.0:
                passed.append(n)
            slots.append(state.slot_take("running:race", 3, 60))

    threads = [threading.Thread(target=taker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(passed) == 10
    assert slots.count(True) == 3
