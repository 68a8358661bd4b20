"""The upload preview child treated as compromised: a reader bug runs the visitor's code there (stood for by
tests/ui/preview_attack_child.py, which replaces the parser). The kernel's layers must leave it nothing of the
app: no saved chats or secret, no environment, no writes, no network, no signals, no programs."""
from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path

import pytest

from ui.uploads.preview_worker import PreviewService

TESTS_UI = Path(__file__).resolve().parent


def attack_boot(targets: dict) -> str:
    return (f"import sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, {str(TESTS_UI)!r}); "
            f"import preview_attack_child as m; m.TARGETS.update({json.dumps(targets)}); m.main()")


@pytest.fixture
def listener():
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    heard: list[str] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            heard.append("connection")
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], heard
    done.set()
    thread.join()
    server.close()


def test_a_reader_bug_in_the_preview_child_reaches_nothing_of_the_app(tmp_path: Path, listener) -> None:
    port, heard = listener
    data = tmp_path / "data"
    data.mkdir()
    (data / "secret").write_text("server-signing-secret")
    upload = tmp_path / "gradio-upload" / "table.csv"
    upload.parent.mkdir()
    upload.write_text("a,b\n1,2\n")
    planted = tmp_path / "planted.txt"
    targets = {"secret": str(data / "secret"), "write": str(planted), "app_pid": os.getpid(), "port": port}
    service = PreviewService(boot=attack_boot(targets))
    try:
        kind, preview = service.preview(upload, "table.csv")
    finally:
        service.close()
    worked = json.loads(preview)
    assert kind == "csv"
    assert worked == {"read the upload": "a,b\n1,2\n"}, worked  # its own copy of the upload, nothing else
    assert not planted.exists()
    assert heard == []


def test_the_child_reads_only_a_copy_in_its_own_folder(tmp_path: Path) -> None:
    """The upload's own folder (Gradio's, holding other visitors' uploads) is never opened to the child."""
    upload = tmp_path / "gradio-upload" / "table.csv"
    upload.parent.mkdir()
    upload.write_text("a,b\n1,2\n")
    (upload.parent / "neighbour.csv").write_text("someone else's upload")
    targets = {"secret": str(upload.parent / "neighbour.csv"), "write": str(upload.parent / "x"), "app_pid": 1,
               "port": 9}
    service = PreviewService(boot=attack_boot(targets))
    try:
        _, preview = service.preview(upload, "table.csv")
        assert service._folder is not None and os.listdir(service._folder) == []  # the copy is gone after
    finally:
        service.close()
    assert set(json.loads(preview)) == {"read the upload"}
