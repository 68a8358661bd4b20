"""Saved chats on a Storage Bucket: what the store needs from the storage under it, checked with stand-ins.

A bucket mounted at /data (ui/deploy.py `--bucket`) is object storage behind a file-system view. The data-folder
store (LocalBlobs) writes every small file as a temporary file renamed over the old one under a `flock`; whether
a mount gives atomic renames and locks cannot be checked here (no bucket offline). What is checked:
- the same chat store over an object store (fsspec `memory://`, whole-object writes as `hf://buckets/...` makes
  them) keeps, lists, reopens, renames and deletes chats with every rename, hard link and lock refused: a store on
  a bucket need not rely on them;
- on the data folder, a rename the storage refuses leaves the previous version whole and no temporary file:
  a mount without atomic renames fails a save loudly, never with a torn chat.
"""
from __future__ import annotations

import errno
import fcntl
import os
import secrets
from pathlib import Path
from typing import Any

import pytest
from ui_testlib import sample_memory

from ui.saved.store import ChatStore, ChatStoreError, new_token
from ui.shared.blobs_fsspec import FsspecBlobs


def _refuse(name: str) -> Any:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSYS, f"{name} is not supported by this storage")
    return refused


@pytest.fixture
def no_renames_links_or_locks(monkeypatch: pytest.MonkeyPatch) -> None:
    for module, name in ((os, "replace"), (os, "rename"), (os, "link"), (fcntl, "flock")):
        monkeypatch.setattr(module, name, _refuse(name))


def test_the_chat_store_on_an_object_store_needs_no_rename_link_or_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_renames_links_or_locks: None) -> None:
    monkeypatch.delenv("AGENTDECK_SECRET", raising=False)  # the secret is a blob too (created once, create-only)
    bucket = FsspecBlobs(f"memory://bucket-{secrets.token_hex(6)}/agentdeck")
    store = ChatStore(tmp_path / "data", blobs=bucket)
    owner = store.owner_for_token(new_token())
    chat = store.create(owner)
    (chat.workspace / "upload.csv").write_text("a,b\n1,2\n")  # the workspace is a plain folder
    store.save_chat(chat, "start", [{"text": "Compute the answer", "task": "Compute the answer"}],
                    sample_memory(), None)
    assert [m.title for m in store.list(owner)] == ["Compute the answer"]
    assert store.current(owner) == chat.id
    # After a restart: a new store object over the same bucket, same secret (read from the bucket).
    again = ChatStore(tmp_path / "data", blobs=bucket)
    reopened = again.get(owner, chat.id)
    memory, metadata = again.load_memory(reopened)
    assert memory is not None and [s.step_type for s in memory.steps] == ["task", "action", "final_answer"]
    assert metadata["turns"][0]["text"] == "Compute the answer"
    assert again.rename(owner, chat.id, "Renamed").title == "Renamed"
    again.set_approval_mode(owner, "approve_code")
    assert again.approval_mode(owner) == "approve_code"
    # A list entry cut short on the bucket is still listed and the chat still opens.
    bucket.put(f"owners/{owner}/{chat.id}/meta.json", b'{"title": "Ren')
    [entry] = again.list(owner)
    assert entry.damaged and entry.title == "Compute the answer"
    assert again.load_memory(again.get(owner, chat.id))[0] is not None
    assert again.delete(owner, chat.id) and again.list(owner) == []
    assert bucket.children(f"owners/{owner}") == ["approval_mode", "current"]


def test_on_the_data_folder_a_refused_rename_leaves_the_chat_whole(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTDECK_SECRET", "s" * 40)
    store = ChatStore(tmp_path / "data")
    owner = store.owner_for_token(new_token())
    chat = store.create(owner)
    store.save_chat(chat, "start", [{"text": "First", "task": "First"}], sample_memory(), None)
    used: list[str] = []
    real_replace = os.replace

    def counting_replace(*args: Any, **kwargs: Any) -> Any:
        used.append("replace")
        return real_replace(*args, **kwargs)

    monkeypatch.setattr(os, "replace", counting_replace)
    store.touch(chat, title="ignored", steps=5)
    assert used  # the data-folder store does rely on renames (agents/memory/atomic.py)
    before = {p.name: p.read_bytes() for p in chat.folder.iterdir() if p.is_file()}
    monkeypatch.setattr(os, "replace", _refuse("rename"))  # a mount that refuses renames
    with pytest.raises((OSError, ChatStoreError)):
        store.save_memory(chat, sample_memory(), {"turns": [{"text": "Second"}]})
    with pytest.raises(OSError):
        store.touch(chat, steps=9)
    after = {p.name: p.read_bytes() for p in chat.folder.iterdir() if p.is_file()}
    assert after == before  # the previous versions, whole; no temporary file left beside them
    monkeypatch.undo()
    monkeypatch.setenv("AGENTDECK_SECRET", "s" * 40)
    assert store.load_memory(chat)[0] is not None and store.list(owner)[0].steps == 5


def test_a_data_folder_without_renames_locks_or_links_is_named_at_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The start-up probe tries on the real folder what the store needs; here a volume that refuses them."""
    import logging

    from ui.saved.storage_probe import check_data_folder

    assert check_data_folder(tmp_path / "disk", needs_link=True) == []  # a disk: everything works
    assert sorted(p.name for p in (tmp_path / "disk").iterdir()) == []  # and nothing is left behind
    for module, name in ((os, "replace"), (os, "link"), (fcntl, "flock")):
        monkeypatch.setattr(module, name, _refuse(name))
    with caplog.at_level(logging.WARNING, logger="agentdeck"):
        problems = check_data_folder(tmp_path / "volume", needs_link=True)
    assert [p.split(" (")[0].split(":")[0] for p in problems] == [
        "renaming a file over another", "locking a file", "hard links"]
    assert "Saves will fail there" in caplog.text and "set AGENTDECK_SECRET" in caplog.text
    assert sorted(p.name for p in (tmp_path / "volume").iterdir()) == []
    assert check_data_folder(tmp_path / "volume", needs_link=False)[-1].startswith("locking")  # a set secret: no link
