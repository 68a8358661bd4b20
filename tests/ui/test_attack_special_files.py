"""Attack: special files that code in the sandbox leaves in its workspace, for the app to open.

The app opens workspace files the worker controls (published copies of files the chat shows or links, the
digest of a shown figure). A FIFO opened for reading blocks until someone opens it for writing: code that left
`report.csv` as a FIFO (or swapped one in while the person clicked it in the files panel), then stopped, held
one of the app's request threads forever; forty of them (Gradio's thread pool) stopped the whole server.
Every such open must return at once and refuse what is not a regular file."""
from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from ui.chat.formatting import file_digest
from ui.chat.published_files import FilePublisher, NotPublishable


def _within(seconds: float, fn, fifo: Path):
    """fn() in a thread; its result if it returned within `seconds`, else a failure (the thread is then released
    by opening the FIFO's other end, so the test leaves nothing behind)."""
    outcome: dict = {}

    def call() -> None:
        try:
            outcome["value"] = fn()
        except Exception as exc:  # the refusal we want, handed to the caller
            outcome["error"] = exc

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # the reader waits: let it go
        thread.join(5)
        pytest.fail(f"opening the FIFO {fifo.name} blocked the app's thread for {seconds} s")
    return outcome


def test_publishing_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    session = tmp_path / "session"
    workspace = session / "workspace"
    workspace.mkdir(parents=True)
    fifo = workspace / "report.csv"
    os.mkfifo(fifo)
    publisher = FilePublisher(root=tmp_path / "published")
    outcome = _within(5, lambda: publisher.publish(fifo, inside=session), fifo)
    assert isinstance(outcome.get("error"), NotPublishable) and "not a regular file" in str(outcome["error"])


def test_the_digest_of_a_shown_file_neither_waits_on_a_fifo_nor_follows_a_link(tmp_path: Path) -> None:
    fifo = tmp_path / "figure.png"
    os.mkfifo(fifo)
    assert _within(5, lambda: file_digest(str(fifo)), fifo) == {"value": None}
    outside = tmp_path / "secret.txt"
    outside.write_text("the app's own file")
    link = tmp_path / "chart.png"
    link.symlink_to(outside)
    assert file_digest(str(link)) is None
    real = tmp_path / "real.png"
    real.write_bytes(b"png")
    assert file_digest(str(real)) is not None
