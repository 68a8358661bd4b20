"""The Docker worker's log, read back by the app for an error message (`ContainerWorker.log_tail`), lives in the
temp folder the container's user owns: whatever is at its name then is the container's choice. No Docker Engine
is needed: the reader is checked on what a hostile worker can leave at that name."""
from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from agents.executor.docker.container import ContainerWorker
from tests.waiting import wait_until


def _reader(log_path: Path) -> ContainerWorker:
    worker = ContainerWorker.__new__(ContainerWorker)  # only its log is read: no container behind it
    worker.log_path = str(log_path)
    return worker


def test_a_fifo_at_the_logs_name_never_holds_the_app(tmp_path: Path) -> None:
    log = tmp_path / ".agentdeck-worker-x.log"
    os.mkfifo(log)
    results: list[str] = []
    reading = threading.Thread(target=lambda: results.append(_reader(log).log_tail()), daemon=True)
    reading.start()
    try:
        wait_until(lambda: not reading.is_alive(), timeout=5, what="the log's tail to be read from a FIFO")
    finally:
        if reading.is_alive():  # free the reader stuck in open(2) before failing
            os.close(os.open(log, os.O_WRONLY | os.O_NONBLOCK))
            reading.join(5)
    assert results == [""]


@pytest.mark.parametrize("plant", ["folder", "link"])
def test_a_folder_or_a_link_at_the_logs_name_gives_no_text_and_no_error(tmp_path: Path, plant: str) -> None:
    log = tmp_path / ".agentdeck-worker-x.log"
    secret = tmp_path / "app-secret.txt"
    secret.write_text("THE-APP-SECRET")
    if plant == "folder":
        log.mkdir()
    else:
        log.symlink_to(secret)
    assert _reader(log).log_tail() == ""


def test_a_regular_log_gives_its_last_characters(tmp_path: Path) -> None:
    log = tmp_path / ".agentdeck-worker-x.log"
    log.write_text("x" * 1000 + "ImportError: no module named numpy\n")
    assert _reader(log).log_tail(40).endswith("ImportError: no module named numpy")
