"""Every read of a blob of the shared chat store is bounded before it is read (whoever can write the bucket decides
a blob's size): an oversized meta.json, memory.json, `current`, `approval_mode` or secret is refused with a clear
error, and nothing else of the owner's chats is lost."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ui_testlib import sample_memory

from ui.saved.data_folder import server_secret
from ui.saved.store import META_MAX_BYTES, ChatStore, ChatStoreError, new_token
from ui.shared.blobs import LocalBlobs

SECRET = b"s" * 40


class CountingBlobs(LocalBlobs):
    """The data folder's blobs, recording the bound of every read."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.bounds: list[tuple[str, int | None]] = []

    def get(self, key: str, max_bytes: int | None = None) -> Any:
        self.bounds.append((key, max_bytes))
        return super().get(key, max_bytes=max_bytes)


def test_every_read_of_the_chat_store_is_bounded(tmp_path: Path) -> None:
    blobs = CountingBlobs(tmp_path)
    store = ChatStore(tmp_path, secret=SECRET, blobs=blobs)
    owner = store.owner_for_token(new_token())
    chat = store.create(owner)
    store.save_chat(chat, "run", [{"task": "t", "text": "t"}], sample_memory(), None)
    store.set_approval_mode(owner, "approve_code")
    store.rename(owner, chat.id, "Renamed")
    assert chat.kept and store.current(owner) == chat.id and store.approval_mode(owner) == "approve_code"
    assert store.load_memory(chat)[0] is not None and [m.title for m in store.list(owner)] == ["Renamed"]
    assert blobs.bounds and [key for key, bound in blobs.bounds if bound is None] == []


def test_an_oversized_blob_is_refused_clearly_and_loses_nothing_else(tmp_path: Path) -> None:
    store = ChatStore(tmp_path, secret=SECRET)
    owner = store.owner_for_token(new_token())
    good, bad = store.create(owner), store.create(owner)
    for chat, text in ((good, "Good chat"), (bad, "Bad chat")):
        store.save_chat(chat, "run", [{"task": text, "text": text}], sample_memory(), None)
    # meta.json over its bound: the chat stays listed (as a damaged entry, titled from its memory) and openable.
    bad.meta_path.write_bytes(b"{" + b" " * (META_MAX_BYTES + 1) + b"}")
    listed = {m.id: m for m in store.list(owner)}
    assert set(listed) == {good.id, bad.id} and listed[bad.id].damaged and listed[bad.id].title == "Bad chat"
    assert listed[good.id].title == "Good chat" and not listed[good.id].damaged
    assert bad.kept and store.load_memory(bad)[0] is not None
    store.rename(owner, bad.id, "Mended")  # the oversized entry is written again whole
    assert {m.title for m in store.list(owner)} == {"Good chat", "Mended"}

    # memory.json over its bound: refused with the reason; the other chat and the list are untouched.
    from agents.memory.serialize import MAX_DOCUMENT_BYTES

    bad.memory_path.write_bytes(b"x" * (MAX_DOCUMENT_BYTES + 1))
    with pytest.raises(ChatStoreError, match="over the limit"):
        store.load_memory(bad)
    assert store.load_memory(good)[0] is not None
    assert {m.title for m in store.list(owner)} == {"Good chat", "Mended"}

    # The owner's small files: read as if nothing was chosen.
    owner_dir = tmp_path / "owners" / owner
    (owner_dir / "current").write_bytes(good.id.encode() * 100)
    (owner_dir / "approval_mode").write_bytes(b"approve_code" + b" " * 10_000)
    assert store.current(owner) is None and store.approval_mode(owner) is None
    assert len(store.list(owner)) == 2


def test_an_oversized_shared_secret_is_refused_with_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTDECK_SECRET", raising=False)

    class Shared:  # a store other than the data folder (a bucket): the secret is a blob of it
        url = "s3://bucket"

        def __init__(self) -> None:
            self.local = LocalBlobs(tmp_path)

        def get(self, key: str, max_bytes: int | None = None) -> Any:
            return self.local.get(key, max_bytes=max_bytes)

    (tmp_path / "secret").write_bytes(b"a" * 100_000)
    with pytest.raises(ChatStoreError, match="over 4,096 bytes.*AGENTDECK_SECRET"):
        server_secret(tmp_path, Shared())  # type: ignore[arg-type]
