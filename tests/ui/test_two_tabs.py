"""Two tabs on one saved chat (issue 17), in-process: the tab that opened or continued the chat last holds it;
the other tab's message is not sent (it stays in the box) and it is offered to take the chat over, which
reloads it from disk. No turn is lost, the file stays whole. A chat clicked in a tab while its page load still
rebuilds another chat's sandbox is shown without waiting for that rebuild."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
from nothing_lost_harness import LiveApp, Req, StallingModel, chat_text
from ui_testlib import code_reply

from tests.waiting import wait_until
from ui.saved.store import ChatStore, new_token
from ui.session.registry import SessionRegistry


@pytest.fixture(autouse=True)
def _secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTDECK_SECRET", "t" * 40)


def test_the_second_tab_is_told_and_can_take_over(tmp_path: Path) -> None:
    replies = [code_reply(f"Turn {i}.", f"final_answer('answer {i}')") for i in range(1, 4)]
    app = LiveApp(tmp_path, StallingModel(replies))
    try:
        token = new_token()
        app.load(token, key="A")
        app.run("first from A", key="A")
        app.load(token, key="B")  # the same browser's second tab opens the same chat: B holds it now
        refused = app.run("second from A", key="A")[-1]
        assert "open in another tab" in chat_text(refused[0]) and refused[1] == {"__type__": "update"}  # the text stays
        assert app.history.refresh({"token": token}, Req("A"))[2].visible  # Take over here is offered
        app.run("from B", key="B")

        taken = list(app.history.take_over({"token": token}, Req("A"), **app.form()))[-1]
        assert "from B" in chat_text(taken[1]) and taken[-1].visible is False  # reloaded from disk
        app.run("second from A", key="A")
        assert "open in another tab" in chat_text(app.run("again from B", key="B")[-1][0])

        chat = app.session("A").record.saved
        memory, metadata = ChatStore(app.config.data_dir).load_memory(chat)  # whole, and every turn in order
        assert [t["text"] for t in metadata["turns"]] == ["first from A", "from B", "second from A"]
        assert [s.output for s in memory.steps if s.step_type == "final_answer"] == ["answer 1", "answer 2", "answer 3"]
    finally:
        app.close()


def test_a_chat_clicked_while_the_page_load_restores_another_does_not_wait_for_it(tmp_path: Path) -> None:
    """The page load's reopened chat holds its session's lock while its sandbox is rebuilt (seconds); the chat
    clicked meanwhile takes the tab at once, and the replaced session is closed once the rebuild lets go."""
    store = ChatStore(tmp_path / "data", secret=b"s" * 32)
    owner = store.owner_for_token(new_token())
    registry = SessionRegistry(tmp_path / "data", agent_factory=lambda settings, workspace: None)
    loading = registry.install("tab", store.create(owner))  # the chat the page load reopens
    held, release = threading.Event(), threading.Event()

    def rebuild() -> None:  # as Session.restore_agent: the lock is held while the sandbox is rebuilt
        with loading.lock:
            held.set()
            release.wait(30)

    rebuilding = threading.Thread(target=rebuild, daemon=True)
    rebuilding.start()
    installed: list = []
    try:
        assert held.wait(10)
        clicked = store.create(owner)
        threading.Thread(target=lambda: installed.append(registry.install("tab", clicked)), daemon=True).start()
        wait_until(lambda: installed, timeout=10, what="the clicked chat to take the tab during the rebuild")
        assert registry.peek("tab") is installed[0] and installed[0].record.saved is clicked
        assert loading.closed_at is None  # not closed under the rebuild's feet
    finally:
        release.set()
        rebuilding.join(10)
    wait_until(lambda: loading.closed_at is not None, timeout=10, what="the replaced session to be closed")
    registry.shutdown()


def test_a_chat_deleted_in_one_tab_is_not_saved_again_by_the_other(tmp_path: Path) -> None:
    """Tab B shows a chat that tab A deletes: B's next message is not sent (it stays in the box), B is told the
    chat was deleted and offered no Take over, and the deleted chat does not come back in the list."""
    replies = [code_reply(f"Turn {i}.", f"final_answer('answer {i}')") for i in range(1, 3)]
    app = LiveApp(tmp_path, StallingModel(replies))
    try:
        token = new_token()
        app.load(token, key="A")
        app.run("first from A", key="A")
        app.load(token, key="B")  # the same browser's second tab opens the same chat
        chat_id = app.session("B").record.saved.id
        app.history.delete_chat({"token": token}, chat_id, Req("A"))
        refused = app.run("from B after the delete", key="B")[-1]
        assert "was deleted" in chat_text(refused[0]) and refused[1] == {"__type__": "update"}  # the text stays
        listed = app.history.refresh({"token": token}, Req("B"))
        assert listed[2].visible is False  # nothing to take over
        assert app.history.store.list(app.history.store.owner_for_token(token)) == []
        assert app.history.store.get(app.history.store.owner_for_token(token), chat_id) is None
    finally:
        app.close()
