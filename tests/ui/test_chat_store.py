"""The saved chats' on-disk store: create, list, rename and delete; owner isolation and ids that cannot
traverse; the server secret; the data folder; signed memory refused whole when tampered with or moved to
another owner or chat. (Resume and the app's handlers: tests/ui/test_ui_persistence.py.)
"""
from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest
from ui_testlib import sample_memory

from ui.saved.data_folder import default_data_dir, server_secret
from ui.saved.store import ChatStore, ChatStoreError, new_token

SECRET = "s" * 40


@pytest.fixture(autouse=True)
def _secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTDECK_SECRET", SECRET)


def test_store_create_list_rename_delete(tmp_path: Path) -> None:
    store = ChatStore(tmp_path, secret=SECRET.encode())
    owner = store.owner_for_token(new_token())
    first, second, unused = store.create(owner), store.create(owner), store.create(owner)
    assert first.workspace.is_dir() and first.folder.parent.name == owner
    store.touch(first, title="First chat", steps=2)
    store.touch(second, title="  Second\n chat  ")
    assert [m.title for m in store.list(owner)] == ["Second chat", "First chat"]  # newest first; unused not listed
    assert unused.id not in {m.id for m in store.list(owner)}
    store.touch(first)  # updated again: now the newest, title kept
    assert [m.title for m in store.list(owner)] == ["First chat", "Second chat"]
    assert store.rename(owner, second.id, "Renamed").title == "Renamed"
    assert {m.title for m in store.list(owner)} == {"First chat", "Renamed"}
    store.set_current(owner, first.id)
    assert store.current(owner) == first.id
    assert store.delete(owner, first.id) and not first.folder.exists()
    assert store.current(owner) is None and [m.title for m in store.list(owner)] == ["Renamed"]
    assert store.delete(owner, first.id) is False
    # A folder never used (no message) is swept once old.
    assert store.sweep_unused(older_than_s=-1) == 1 and not unused.folder.exists() and second.folder.exists()


def test_owners_are_isolated_and_ids_cannot_traverse(tmp_path: Path) -> None:
    store = ChatStore(tmp_path, secret=SECRET.encode())
    token, other_token = new_token(), new_token()
    owner, other = store.owner_for_token(token), store.owner_for_token(other_token)
    assert owner != other and token not in owner  # the folder name does not reveal the token
    chat = store.create(owner)
    store.touch(chat, title="mine")
    # Another browser knows the id but cannot list, open, rename or delete it.
    assert store.list(other) == []
    assert store.get(other, chat.id) is None
    with pytest.raises(ChatStoreError):
        store.rename(other, chat.id, "stolen")
    assert store.delete(other, chat.id) is False and chat.folder.exists()
    # Crafted ids and owner keys never reach a path.
    for bad in ("../" + owner + "/" + chat.id, "..", "/etc", chat.id.upper(), chat.id + "/..", "", None, 42,
                chat.id[:-1] + "/"):
        assert store.get(owner, bad) is None, bad
    for bad_owner in ("..", "../owners", owner[:-1], "x" * 64):
        with pytest.raises(ChatStoreError):
            store.list(bad_owner)
    for bad_token in ("", "short", "../../" + "a" * 58, None):
        with pytest.raises(ChatStoreError):
            store.owner_for_token(bad_token)
    # With login on, the owner is the user, not the browser.
    assert store.owner_for_user("ana") == store.owner_for_user("ana") != store.owner_for_user("bob")


def test_secret_from_env_or_generated_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert server_secret(tmp_path) == SECRET.encode()
    monkeypatch.delenv("AGENTDECK_SECRET")
    secret = server_secret(tmp_path / "data")
    path = tmp_path / "data" / "secret"
    assert len(secret) >= 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert server_secret(tmp_path / "data") == secret  # stable across restarts


def test_default_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTDECK_DATA_DIR", raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert default_data_dir(tmp_path) == (tmp_path / "data").resolve()
    assert default_data_dir(tmp_path, str(tmp_path / "elsewhere")) == (tmp_path / "elsewhere").resolve()


def test_tampered_or_foreign_memory_is_refused_whole(tmp_path: Path) -> None:
    store = ChatStore(tmp_path, secret=SECRET.encode())
    owner = store.owner_for_token(new_token())
    chat = store.create(owner)
    memory = sample_memory()
    store.save_memory(chat, memory, {"turns": []})
    loaded, metadata = store.load_memory(chat)
    assert [s.step_type for s in loaded.steps] == ["task", "action", "final_answer"] and metadata == {"turns": []}
    original = chat.memory_path.read_text()
    chat.memory_path.write_text(original.replace("answer_value = 6 * 7", "answer_value = 6 * 9"))
    with pytest.raises(ChatStoreError, match="signature does not match"):
        store.load_memory(chat)
    foreign = ChatStore(tmp_path / "other", secret=b"another-server-secret-0123456789")
    chat.memory_path.write_text(original)
    with pytest.raises(ChatStoreError, match="signed with another server secret"):  # another server's file
        foreign.load_memory(foreign_chat(foreign, chat))
    chat.memory_path.write_text("{not json")
    with pytest.raises(ChatStoreError, match="could not be read"):
        store.load_memory(chat)


def test_signed_memory_moved_to_another_owner_or_chat_is_refused(tmp_path: Path) -> None:
    """Same server, same secret: a valid file copied to another owner's folder or chat id does not load."""
    store = ChatStore(tmp_path, secret=SECRET.encode())
    victim = store.create(store.owner_for_token(new_token()))
    store.save_memory(victim, sample_memory(), {"turns": []})
    assert store.load_memory(victim)[0] is not None
    other_owner = foreign_chat(store, victim)
    with pytest.raises(ChatStoreError, match="signature does not match"):
        store.load_memory(other_owner)
    same_owner_other_chat = store.create(victim.owner)
    same_owner_other_chat.memory_path.write_bytes(victim.memory_path.read_bytes())
    with pytest.raises(ChatStoreError, match="signature does not match"):
        store.load_memory(same_owner_other_chat)


def foreign_chat(store: ChatStore, chat: Any) -> Any:
    owner = store.owner_for_token(new_token())
    other = store.create(owner)
    other.memory_path.write_bytes(chat.memory_path.read_bytes())
    return other
