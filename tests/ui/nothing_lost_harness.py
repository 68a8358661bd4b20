"""The app's handlers in-process with a model the test controls: a replay script whose chosen calls stall
(as a provider that never answers and ignores Stop) until the test lets them go.

Shared by the tests of issue 17 (nothing lost: Stop, per-step saves, full disks, two tabs, reloads).
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ui_testlib import Req, chat_text, code_reply, text_of, write_transcript  # noqa: F401 - Req, chat_text, text_of re-exported
from ui_testlib import form as settings_form

from agents.models.replay import ReplayModel
from tests.waiting import wait_until  # noqa: F401 - re-exported
from ui.agent_factory import build_agent
from ui.app import AgentDeckApp
from ui.panels.exports import ChatExports
from ui.panels.history import HistoryController
from ui.settings import AppConfig

# The scripted turns these tests share: a variable set in step 1, used later; a step that runs a long time.
SET_X = code_reply("Set a variable.", "x = 41\nprint('x is set')")
ANSWER = code_reply("Use it.", "final_answer(x + 1)")
SLOW = code_reply("This takes a while.", "import time\nprint('sleeping', flush=True)\ntime.sleep(60)")


class StallingModel(ReplayModel):
    """A replay model shared by every agent the app builds; the calls numbered in `stall_at` (0 = the first
    call made) hang before their first chunk until `release()`. Replies are taken in order after the hang,
    so an agent started while another one hangs gets the next scripted reply."""

    def __init__(self, replies: list[str], stall_at: tuple[int, ...] = ()) -> None:
        super().__init__(replies)
        self.started = 0
        self._lock = threading.Lock()
        self.gates = {i: threading.Event() for i in stall_at}
        self.stalled = {i: threading.Event() for i in stall_at}

    def generate_stream(self, messages, stop_sequences=None, tools=None, **kwargs) -> Iterator[Any]:
        with self._lock:
            number, self.started = self.started, self.started + 1
        if number in self.gates:
            self.stalled[number].set()
            self.gates[number].wait()  # deaf to Stop, like a stream that never sends anything
        yield from super().generate_stream(messages, stop_sequences=stop_sequences, tools=tools, **kwargs)

    def release(self) -> None:
        for gate in self.gates.values():
            gate.set()


class LiveApp:
    """AgentDeckApp on a data folder whose agents all use `model` (a new LiveApp = the app after a restart)."""

    def __init__(self, tmp_path: Path, model: StallingModel, name: str = "script.json") -> None:
        transcript = write_transcript(tmp_path / name, ["unused"])
        self.config = AppConfig(model=f"replay:{transcript}", data_dir=tmp_path / "data", authorized_imports=(),
                                max_steps=6)
        self.model = model
        self.app = AgentDeckApp(self.config)
        self.history = HistoryController(self.app.services)  # the saved-chats list, as the page wires it
        self.exports = ChatExports(self.app.services)  # its export buttons

        def factory(settings: Any, workdir: Path) -> Any:
            agent = build_agent(settings, workdir, self.config)
            agent.model = model
            return agent

        self.app.registry.agent_factory = factory

    def form(self) -> dict[str, Any]:
        return settings_form(self.config.model)

    def load(self, token: str, key: str = "tab") -> tuple:
        return list(self.history.on_load({"token": token}, Req(key), **self.form()))[-1]

    def run(self, text: str, key: str = "tab", mode: str | None = None) -> list[tuple]:
        return list(self.app.run({"text": text, "files": []}, Req(key), mode, **self.form()))

    def run_in_thread(self, text: str, key: str = "tab", mode: str | None = None) -> tuple[threading.Thread, list]:
        """Send `text` from a thread (as a page's streaming request); the list fills with the updates."""
        updates: list = []

        def go() -> None:
            for update in self.app.run({"text": text, "files": []}, Req(key), mode, **self.form()):
                updates.append(update)

        thread = threading.Thread(target=go, daemon=True)
        thread.start()
        return thread, updates

    def session(self, key: str = "tab") -> Any:
        return self.app.registry.peek(key)

    def close(self) -> None:
        self.model.release()
        self.app.registry.shutdown()


def noting_load_waits(owners: Any) -> threading.Event:
    """An event set once a handler starts waiting for its page's load (`TabOwners.wait_loaded`)."""
    waiting, wait_loaded = threading.Event(), owners.wait_loaded

    def noted_wait(key: str, timeout: float = 30.0) -> bool:
        waiting.set()
        return bool(wait_loaded(key, timeout))

    owners.wait_loaded = noted_wait
    return waiting
