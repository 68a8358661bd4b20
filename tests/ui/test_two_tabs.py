"""Two tabs on one saved chat (issue 17), in-process: the tab that opened or continued the chat last holds it;
the other tab's message is not sent (it stays in the box) and it is offered to take the chat over, which
reloads it from disk. No turn is lost, the file stays whole."""
from __future__ import annotations

from pathlib import Path

import pytest
from nothing_lost_harness import LiveApp, Req, StallingModel, chat_text
from ui_testlib import code_reply

from ui.saved.store import ChatStore, new_token


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

        taken = list(app.history.take_over({"token": token}, *app.form(), Req("A")))[-1]
        assert "from B" in chat_text(taken[1]) and taken[-1].visible is False  # reloaded from disk
        app.run("second from A", key="A")
        assert "open in another tab" in chat_text(app.run("again from B", key="B")[-1][0])

        chat = app.session("A").record.saved
        memory, metadata = ChatStore(app.config.data_dir).load_memory(chat)  # whole, and every turn in order
        assert [t["text"] for t in metadata["turns"]] == ["first from A", "from B", "second from A"]
        assert [s.output for s in memory.steps if s.step_type == "final_answer"] == ["answer 1", "answer 2", "answer 3"]
    finally:
        app.close()
