"""Chat titles and the list's search (issue 31, item 6), on the store: no entry for a chat nothing was sent in,
titles from the task told apart by their answers, search over messages and answers."""
from __future__ import annotations

from pathlib import Path

from agents.memory import AgentMemory, FinalAnswerStep, TaskStep
from ui.saved.store import ChatStore, new_token
from ui.saved.titles import title_from


def memory_with(answer: str) -> AgentMemory:
    memory = AgentMemory("system")
    memory.add_step(TaskStep(task="t", run_id="r"))
    memory.add_step(FinalAnswerStep(output=answer, run_id="r"))
    return memory


def test_a_chat_nothing_was_sent_in_is_not_listed(tmp_path: Path) -> None:
    store = ChatStore(tmp_path, secret=b"s" * 32)
    owner = store.owner_for_token(new_token())
    chat = store.create(owner)  # New chat; the run it replaced ends and saves into it
    store.save_chat(chat, "run", [], memory_with("from the old chat's run"), None)
    assert store.list(owner) == []


def test_titles_from_the_task_read_differently_and_search_finds_messages_and_answers(tmp_path: Path) -> None:
    store = ChatStore(tmp_path, secret=b"s" * 32)
    owner = store.owner_for_token(new_token())
    text = ("Explore penguins.csv: how many penguins of each species are there, and what is their average body "
            "mass? Plot flipper length against body mass.")
    for i in range(7):
        chat = store.create(owner)
        turns = [{"text": text, "uploads": [{"name": "penguins.csv", "original": "penguins.csv"}]}]
        store.save_chat(chat, "start", turns, memory_with(""), None)
        store.save_chat(chat, "run", turns, memory_with(f"Adelie {150 + i}"), None)
    titles = [m.title for m in store.list(owner)]
    assert len(set(titles)) == 7, titles
    assert all(t.startswith("Explore penguins.csv") for t in titles)
    assert [m.title for m in store.search(owner, "adelie 153")] == [t for t in titles if "153" in t]
    assert len(store.search(owner, "flipper")) == 7 and store.search(owner, "walrus") == []


def test_a_title_without_text_names_the_files_and_drops_the_polite_opening() -> None:
    assert title_from("", ["a.csv", "b.xlsx"]) == "Files: a.csv, b.xlsx"
    assert title_from("Please could you plot sin and cos. Save it.", ["trig.csv"]) == "plot sin and cos. · trig.csv"
