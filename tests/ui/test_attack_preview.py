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

from ui.uploads.preview_worker import PROJECT_ROOT, REAL_IMPORT_PATH, PreviewFailed, PreviewService

TESTS_UI = Path(__file__).resolve().parent


def attack_boot(targets: dict) -> str:
    return (f"{REAL_IMPORT_PATH}; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, {str(TESTS_UI)!r}); "
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


def test_a_child_parses_one_file_and_is_gone_before_the_next_visitors(tmp_path: Path) -> None:
    """A reader bug keeps running in its child (here it also remembers each file and burns CPU in a thread): the
    next visitor's upload must meet a fresh child, and the used one must be gone once its reply is in."""
    mine, theirs = tmp_path / "mine.csv", tmp_path / "theirs.csv"
    mine.write_text("a\n1\n")
    theirs.write_text("salary\n123456\n")
    service = PreviewService(boot=attack_boot({"mode": "remember"}))
    try:
        first = json.loads(service.preview(mine, "mine.csv")[1])
        with pytest.raises(ProcessLookupError):
            os.kill(first["pid"], 0)
        service.preview(theirs, "theirs.csv")
        third = json.loads(service.preview(mine, "mine.csv")[1])
    finally:
        service.close()
    assert third["seen"] == ["a\n1\n"], third  # what other visitors sent stays out of reach
    assert third["pid"] != first["pid"]


@pytest.mark.parametrize("mode", ["huge", "kind"])
def test_a_reply_the_parser_never_makes_is_refused(tmp_path: Path, mode: str) -> None:
    """The app holds the child's reply to what the parser makes: a preview of at most MAX_PREVIEW_CHARS read
    within a small frame, for the kind of file the upload's name says."""
    upload = tmp_path / "table.csv"
    upload.write_text("a,b\n1,2\n")
    service = PreviewService(boot=attack_boot({"mode": mode}))
    try:
        with pytest.raises(PreviewFailed, match="reply"):
            service.preview(upload, "table.csv")
        assert service.max_reply_bytes < 1024 * 1024
    finally:
        service.close()


def test_without_a_user_id_of_its_own_the_child_changes_no_files_mode_or_times(tmp_path: Path, monkeypatch) -> None:
    """Where the child keeps the app's user (a non-root app, or a Python root's other users cannot read), the
    kernel's Landlock does not cover a file's mode or times: seccomp must refuse them, or a reader bug could open
    the data folder to every local user or lock the app out of it (chmod 000)."""
    import ui.uploads.preview_worker as preview_worker

    monkeypatch.setattr(preview_worker, "own_user_id", lambda app_root, folder: None)
    secret = tmp_path / "data" / "secret"
    secret.parent.mkdir()
    secret.write_text("server-signing-secret")
    secret.chmod(0o600)
    before = secret.stat()
    upload = tmp_path / "table.csv"
    upload.write_text("a,b\n1,2\n")
    service = PreviewService(boot=attack_boot({"secret": str(secret), "write": str(tmp_path / "x"), "app_pid": 1,
                                               "port": 9}))
    try:
        _, preview = service.preview(upload, "table.csv")
    finally:
        service.close()
    after = secret.stat()
    assert (after.st_mode, after.st_mtime_ns) == (before.st_mode, before.st_mtime_ns)
    assert set(json.loads(preview)) == {"read the upload"}


def test_the_child_is_confined_like_the_sandbox(tmp_path: Path) -> None:
    """The sandbox's kernel layers in full: a user id of its own (the app is root), a thread and a file limit,
    a private view (another session's workspace and the app's data cannot even be stat'ed or watched), and the
    same seccomp rules (a live pid answers as a dead one does; no abstract socket name can be taken)."""
    import subprocess
    import uuid

    other = tmp_path / "other-session"
    other.mkdir()
    (other / "q3-salaries.xlsx").write_text("salaries")
    upload = tmp_path / "table.csv"
    upload.write_text("a,b\n1,2\n")
    gone = subprocess.Popen(["true"])
    gone.wait()
    name = f"agentdeck-preview-{uuid.uuid4().hex[:8]}"
    targets = {"mode": "kernel", "app_pid": os.getpid(), "dead_pid": gone.pid, "abstract": name,
               "outside": [str(other), str(other / "q3-salaries.xlsx"), str(PROJECT_ROOT / "app.py"), "/proc/self",
                           "/etc/passwd"]}
    service = PreviewService(boot=attack_boot(targets))
    try:
        _, preview = service.preview(upload, "table.csv")
    finally:
        service.close()
    facts = json.loads(preview)
    if os.geteuid() == 0:
        assert facts["uid"] != 0, facts  # an id of its own (RLIMIT_NPROC binds no uid 0)
    assert facts["threads"] < 64 and facts["open_files"] <= 128, facts
    assert facts["stat outside"] == "00000", facts
    assert facts["inotify"] is False and facts["abstract bind"] is False, facts
    if "live" in facts:
        differing = {k: (v, facts["dead"][k]) for k, v in facts["live"].items() if v != facts["dead"][k]}
        assert not differing, differing
    squat = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    squat.bind(("\0" + name).encode())  # the name is still free for the app
    squat.close()
