"""The files panel's listing and removal, on a real Session (no browser)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from ui.panels.files import listed_file
from ui.session.session import Session
from ui.session.workspace_files import FileRemovalError
from ui.settings import RunSettings


@pytest.fixture
def session(tmp_path: Path) -> Session:
    made = Session("tab", tmp_path / "session", agent_factory=lambda *a: None, max_upload_bytes=1 << 20)
    yield made
    made.remove_files()


def test_lists_uploads_first_then_every_workspace_file(session: Session, tmp_path: Path) -> None:
    source = tmp_path / "z-data.csv"
    source.write_text("a,b\n1,2\n")
    session.record.take_message("", [(str(source), "z-data.csv")], 1 << 20)
    ws = session.record.workspace
    (ws / "chart.png").write_bytes(b"\x89PNG fake")
    (ws / "out").mkdir()
    (ws / "out" / "table.csv").write_text("x\n")
    (ws / ".hidden").write_text("secret cache")
    (tmp_path / "outside.txt").write_text("not ours")
    os.symlink(tmp_path / "outside.txt", ws / "link.txt")
    listed = [os.path.relpath(p, ws) for p in session.record.workspace_files()]
    assert listed[0] == "z-data.csv" and sorted(listed[1:]) == ["chart.png", "out/table.csv"]
    assert [os.path.basename(p) for p in session.record.file_paths()] == [os.path.basename(p) for p in listed]


def test_remove_deletes_the_workspace_copy_and_refuses_the_rest(session: Session, tmp_path: Path) -> None:
    ws = session.record.workspace
    (ws / "a.csv").write_text("1\n")
    (ws / "b.png").write_bytes(b"png")
    (tmp_path / "outside.txt").write_text("keep me")
    row = f"{[os.path.basename(p) for p in session.record.file_paths()].index('a.csv')}:a.csv"
    assert listed_file(session.record, row) == str(ws / "a.csv")
    assert listed_file(session.record, "0:not-that-name.csv") is None and listed_file(session.record, "x:a.csv") is None
    version = session.record.files_version
    assert session.remove_file("a.csv") == "a.csv"
    assert not (ws / "a.csv").exists() and session.record.files_version == version + 1
    assert [os.path.basename(p) for p in session.record.file_paths()] == ["b.png"]
    with pytest.raises(FileRemovalError, match="no longer in the workspace"):
        session.remove_file("../outside.txt")
    assert (tmp_path / "outside.txt").read_text() == "keep me"


def test_no_removal_while_a_run_is_going(tmp_path: Path) -> None:
    import threading

    release = threading.Event()

    class Agent:
        memory = None  # no step yet

        def run(self, task: str, stream: bool, reset: bool) -> object:
            from agents.loop.event_stream import EventStream

            return EventStream(lambda emit: release.wait(10), on_abandon=release.set, thread_name="test-run")

        def close(self) -> None:
            release.set()

    session = Session("tab", tmp_path / "session", agent_factory=lambda *a: Agent(), max_upload_bytes=1 << 20)
    (session.record.workspace / "a.csv").write_text("1\n")
    try:
        assert session.start_run("go", [], RunSettings(model="replay:none"))
        with pytest.raises(FileRemovalError, match="wait for it to finish"):
            session.remove_file("a.csv")
        assert (session.record.workspace / "a.csv").is_file()
    finally:
        release.set()
        session.close()


def test_files_at_any_depth_a_path_can_name_are_listed(session: Session) -> None:
    """The listing stopped six folders down; a tree past the path limit must not break it either."""
    from tests.deep_trees import make_deep

    workspace = session.record.workspace
    workspace.mkdir(parents=True, exist_ok=True)
    deep = workspace.joinpath(*[f"level{i}" for i in range(10)], "result.csv")
    deep.parent.mkdir(parents=True)
    deep.write_text("a\n1\n")
    make_deep(str(workspace), 45, b"too deep to name")
    assert session.record.workspace_files() == [str(deep)]
