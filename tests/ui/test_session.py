"""Session's own invariants, through its methods (ui/session/session.py): a blank session becomes a saved chat,
a hand-over is streamed once, and a closed agent's memory reaches the next agent."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from agents.loop.event_stream import EventStream
from agents.memory import AgentMemory, TaskStep
from ui.saved.store import ChatStore, new_token
from ui.session import agent_slot
from ui.session.session import Session
from ui.settings import RunSettings

SETTINGS = RunSettings(model="replay:none")


def _memory(*steps: TaskStep) -> AgentMemory:
    memory = AgentMemory("system")
    memory.steps = list(steps)
    return memory


class _Agent:
    """An agent whose run waits until `release` is set; `memory` is what it remembers."""

    def __init__(self, release: threading.Event, memory: AgentMemory | None = None) -> None:
        self.release, self.memory, self.closed = release, memory or _memory(), False

    def run(self, task: str, stream: bool, reset: bool) -> EventStream:
        return EventStream(lambda emit: self.release.wait(10), on_abandon=self.release.set, thread_name="test-run")

    def interrupt(self) -> None:
        self.release.set()

    def close(self) -> None:
        self.closed = True


def test_a_blank_session_becomes_a_saved_chat_and_a_used_one_does_not(tmp_path: Path) -> None:
    store = ChatStore(tmp_path / "data", secret=b"s" * 32)
    owner = store.owner_for_token(new_token())
    blank = Session("a", tmp_path / "a", agent_factory=lambda *a: None, max_upload_bytes=1000)
    assert blank.keep_in(lambda: store.create(owner))
    chat = blank.record.saved
    assert chat is not None and blank.record.workspace == chat.workspace and not (tmp_path / "a").exists()
    assert not blank.keep_in(lambda: store.create(owner)) and blank.record.saved is chat  # kept once

    used = Session("b", tmp_path / "b", agent_factory=lambda *a: None, max_upload_bytes=1000)
    upload = tmp_path / "data.csv"
    upload.write_text("a,b\n1,2\n")
    used.record.take_message("", [(str(upload), "data.csv")], 1000)
    made = []
    assert not used.keep_in(lambda: made.append(1) or store.create(owner))
    assert made == [] and used.record.saved is None and (tmp_path / "b" / "workspace" / "data.csv").is_file()


def test_a_run_handed_to_another_tab_is_streamed_there_once(tmp_path: Path) -> None:
    release = threading.Event()
    session = Session("old-tab", tmp_path / "s", agent_factory=lambda *a: _Agent(release), max_upload_bytes=1000)
    try:
        assert not session.take_hand_over()  # nothing was handed over
        assert session.start_run("go", [], SETTINGS)
        session.detach()
        assert session.detached_at is not None
        session.hand_over("new-tab")
        assert session.key == "new-tab" and session.detached_at is None
        assert session.take_hand_over() and not session.take_hand_over()  # the second drain would end the first
    finally:
        release.set()
        session.close()


def test_a_closed_agent_s_memory_goes_to_the_next_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    remembered = _memory(TaskStep(task="the first message"))
    built: list[_Agent] = []

    def factory(settings: RunSettings, workspace: Path) -> _Agent:
        built.append(_Agent(release, remembered if not built else None))
        return built[-1]

    session = Session("tab", tmp_path / "s", agent_factory=factory, max_upload_bytes=1000)
    session.use_agent(factory(SETTINGS, tmp_path), SETTINGS)
    first = session.agent
    assert session.hibernate() and first.closed and session.agent is None
    assert session.memory is remembered  # kept while no agent holds a sandbox
    carried = []  # the next agent gets the memory (its sandbox re-runs the recorded code: tested in persistence)
    monkeypatch.setattr(agent_slot, "carry_memory_into",
                        lambda agent, memory, transcript, why: carried.append((agent, memory, why)))
    try:
        assert session.start_run("go on", [], SETTINGS)
    finally:
        release.set()
        session.close()
    assert carried == [(built[-1], remembered, agent_slot.SLEPT_NOTE)] and built[-1] is not first
