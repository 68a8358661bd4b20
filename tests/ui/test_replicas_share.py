"""Two replicas in one test: two ChatStores, lease tables and rate limiters over one S3 bucket (moto's server on
loopback) and one Redis (a real redis-server on loopback), as two app processes behind a proxy would have."""
from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from shared_servers import redis_url, s3_client, s3_endpoint  # noqa: F401 (fixtures)
from ui_testlib import sample_memory

import ui.session.lease as lease_module
from ui.saved.store import ChatStore, ChatStoreError, new_token
from ui.session.lease import REFUSAL, ChatLeases
from ui.shared.blobs_s3 import S3Blobs
from ui.shared.state_redis import RedisState
from ui.web.rate_limit import RateLimitedError, RunRateLimiter


@pytest.fixture
def replicas(s3_endpoint: str, redis_url: str, tmp_path: Path,  # noqa: F811
             monkeypatch: pytest.MonkeyPatch) -> tuple[ChatStore, ChatStore]:
    monkeypatch.delenv("AGENTDECK_SECRET", raising=False)
    client = s3_client(s3_endpoint)
    bucket = f"chats-{secrets.token_hex(6)}"
    client.create_bucket(Bucket=bucket)
    RedisState(redis_url).client.flushdb()
    return tuple(ChatStore(tmp_path / name, blobs=S3Blobs(f"s3://{bucket}/agentdeck", client=client),  # type: ignore[return-value]
                           state=RedisState(redis_url)) for name in ("replica-a", "replica-b"))


def test_a_chat_saved_on_one_replica_is_listed_and_opened_on_the_other(replicas) -> None:
    a, b = replicas
    assert a.secret == b.secret  # one signing secret, created in the store by the first
    owner = a.owner_for_token(new_token())
    chat = a.create(owner)
    a.save_chat(chat, "start", [{"text": "count the penguins"}], sample_memory(), None)
    assert [m.id for m in b.list(owner)] == [chat.id] and b.current(owner) == chat.id
    on_b = b.get(owner, chat.id)
    assert on_b is not None and on_b.kept and on_b.workspace.is_dir()  # a local working copy on b
    memory, metadata = b.load_memory(on_b)
    assert memory is not None and metadata["turns"] == [{"text": "count the penguins"}]
    assert not (Path(a.data_dir) / "owners" / owner / chat.id / "memory.json").exists()  # in the bucket only


def test_the_later_of_two_replicas_saving_one_chat_is_refused_and_the_first_update_stands(replicas) -> None:
    a, b = replicas
    owner = a.owner_for_token(new_token())
    chat = a.create(owner)
    a.save_chat(chat, "start", [{"text": "first"}], sample_memory(), None)
    on_a, on_b = a.get(owner, chat.id), b.get(owner, chat.id)
    a.load_memory(on_a)
    b.load_memory(on_b)
    a.save_memory(on_a, sample_memory(), {"turns": [{"text": "first"}, {"text": "from a"}]})
    with pytest.raises(ChatStoreError, match="saved meanwhile"):
        b.save_memory(on_b, sample_memory(), {"turns": [{"text": "first"}, {"text": "from b"}]})
    assert b.load_memory(on_b)[1]["turns"][-1] == {"text": "from a"}  # reopened: b now has a's version
    b.save_memory(on_b, sample_memory(), {"turns": [{"text": "from b, after reading a's"}]})  # now it saw a's


def test_a_chat_deleted_on_one_replica_is_never_saved_again_by_the_other(replicas) -> None:
    a, b = replicas
    owner = a.owner_for_token(new_token())
    chat = a.create(owner)
    a.save_chat(chat, "start", [{"text": "x"}], sample_memory(), None)
    on_b = b.get(owner, chat.id)
    assert a.delete(owner, chat.id)
    assert on_b.deleted and b.was_deleted(owner, chat.id)
    b.save_chat(on_b, "end", [{"text": "x"}, {"text": "y"}], sample_memory(), None)
    assert b.list(owner) == [] and a.get(owner, chat.id) is None
    assert b.get(owner, chat.id) is None and on_b.folder.is_dir()  # not opened from b's leftover local copy
    assert b.blobs.children(f"owners/{owner}/{chat.id}") == []


class _Saved:
    def __init__(self, chat) -> None:  # type: ignore[no-untyped-def]
        self.saved = chat


class _Session:
    def __init__(self, chat) -> None:  # type: ignore[no-untyped-def]
        self.record = _Saved(chat)


class _NoSessions:
    def peek(self, key: str) -> None:
        return None


def test_a_tab_on_another_replica_is_refused_while_the_first_tab_holds_the_lease(
        replicas, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    a, b = replicas
    owner = a.owner_for_token(new_token())
    chat = a.create(owner)
    a.save_chat(chat, "start", [{"text": "x"}], sample_memory(), None)
    leases_a = ChatLeases(_NoSessions(), RedisState(redis_url))  # type: ignore[arg-type]
    leases_b = ChatLeases(_NoSessions(), RedisState(redis_url))  # type: ignore[arg-type]
    monkeypatch.setattr(lease_module, "REPLICA", "replica-a")
    assert leases_a.claim("tab-1", _Session(chat)) is None  # type: ignore[arg-type]
    monkeypatch.setattr(lease_module, "REPLICA", "replica-b")
    assert leases_b.claim("tab-2", _Session(b.get(owner, chat.id))) == REFUSAL  # type: ignore[arg-type]
    assert leases_b.claim("tab-1", _Session(b.get(owner, chat.id))) is None  # type: ignore[arg-type] # failover
    leases_b.hold(chat.id, "tab-2")  # Take over here
    monkeypatch.setattr(lease_module, "REPLICA", "replica-a")
    assert leases_a.claim("tab-1", _Session(chat)) == REFUSAL  # type: ignore[arg-type]


def test_a_visitors_run_limits_count_across_replicas(redis_url: str) -> None:  # noqa: F811
    RedisState(redis_url).client.flushdb()
    one, two = (RunRateLimiter(3, at_once=1, state=RedisState(redis_url)) for _ in range(2))
    one.check("203.0.113.7")
    two.check("203.0.113.7")
    one.check("203.0.113.7")
    with pytest.raises(RateLimitedError, match="3 per minute"):
        two.check("203.0.113.7")
    two.check("198.51.100.1")  # another visitor has its own minute
    with one.running("203.0.113.7"):
        with pytest.raises(RateLimitedError, match="at once"):
            with two.running("203.0.113.7"):
                pass
    with two.running("203.0.113.7"):
        pass


def test_a_page_open_on_one_replica_is_seen_by_the_other(redis_url: str) -> None:  # noqa: F811
    from ui.session.presence import PagePresence

    RedisState(redis_url).client.flushdb()
    here, there = PagePresence(), PagePresence()
    here.share(RedisState(redis_url))
    there.share(RedisState(redis_url))
    here.opened("tab-hash")
    here.opened("tab-hash")  # a second stream of the same page
    assert there.has_page("tab-hash") and not there.has_page("another-tab")
    here.closed("tab-hash")
    assert there.has_page("tab-hash")
    here.closed("tab-hash")
    assert not there.has_page("tab-hash") and not here.has_page("tab-hash")


def test_a_visitors_upload_share_counts_across_replicas(redis_url: str) -> None:  # noqa: F811
    from ui.web.disk_floor import UploadShares

    RedisState(redis_url).client.flushdb()
    one, two = (UploadShares(10_000, RedisState(redis_url)) for _ in range(2))
    one.add("203.0.113.7", 6_000)
    two.add("203.0.113.7", 3_000)
    assert one.left("203.0.113.7") == two.left("203.0.113.7") == 1_000
    assert two.left("198.51.100.1") == 10_000


def test_an_app_on_redis_leaves_the_next_apps_page_count_its_own(tmp_path: Path, redis_url: str) -> None:  # noqa: F811
    """Pages counted in Redis belong to the app that was told to share them: an app built later in the same
    process without Redis (tests build many; one process may serve one of each) must neither see another
    replica's pages nor ask a Redis that may be gone. Before, sharing switched the process-wide count to Redis."""
    from ui.services import Services
    from ui.settings import AppConfig

    RedisState(redis_url).client.flushdb()
    shared = Services.create(AppConfig(model="replay:none", data_dir=tmp_path / "a", redis_url=redis_url))
    alone = Services.create(AppConfig(model="replay:none", data_dir=tmp_path / "b"))
    RedisState(redis_url).count_add("page:tab-on-the-other-replica", 1, 60)
    assert shared.registry.presence.has_page("tab-on-the-other-replica")
    assert not alone.registry.presence.has_page("tab-on-the-other-replica")
