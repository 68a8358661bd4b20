"""The files panel's listing and removal, on a real Session (no browser)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from ui.panels.files import FileRemovalError, listed_file, remove_file, shown_paths, workspace_files
from ui.session.session import Session
from ui.uploads.intake import ingest_upload


@pytest.fixture
def session(tmp_path: Path) -> Session:
    made = Session("tab", tmp_path / "session", agent_factory=lambda *a: None, max_upload_bytes=1 << 20)
    yield made
    made.publisher.remove()


def test_lists_uploads_first_then_every_workspace_file(session: Session, tmp_path: Path) -> None:
    source = tmp_path / "z-data.csv"
    source.write_text("a,b\n1,2\n")
    session.uploads = [ingest_upload(source, session.workspace)]
    ws = session.workspace
    (ws / "chart.png").write_bytes(b"\x89PNG fake")
    (ws / "out").mkdir()
    (ws / "out" / "table.csv").write_text("x\n")
    (ws / ".hidden").write_text("secret cache")
    (tmp_path / "outside.txt").write_text("not ours")
    os.symlink(tmp_path / "outside.txt", ws / "link.txt")
    listed = [os.path.relpath(p, ws) for p in workspace_files(session)]
    assert listed[0] == "z-data.csv" and sorted(listed[1:]) == ["chart.png", "out/table.csv"]
    assert [os.path.basename(p) for p in shown_paths(session)] == [os.path.basename(p) for p in listed]


def test_remove_deletes_the_workspace_copy_and_refuses_the_rest(session: Session, tmp_path: Path) -> None:
    ws = session.workspace
    (ws / "a.csv").write_text("1\n")
    (ws / "b.png").write_bytes(b"png")
    (tmp_path / "outside.txt").write_text("keep me")
    row = f"{[os.path.basename(p) for p in shown_paths(session)].index('a.csv')}:a.csv"
    assert listed_file(session, row) == str(ws / "a.csv")
    assert listed_file(session, "0:not-that-name.csv") is None and listed_file(session, "x:a.csv") is None
    version = session.files_version
    assert remove_file(session, "a.csv") == "a.csv"
    assert not (ws / "a.csv").exists() and session.files_version == version + 1
    assert [os.path.basename(p) for p in shown_paths(session)] == ["b.png"]
    with pytest.raises(FileRemovalError, match="no longer in the workspace"):
        remove_file(session, "../outside.txt")
    assert (tmp_path / "outside.txt").read_text() == "keep me"


def test_no_removal_while_a_run_is_going(session: Session) -> None:
    (session.workspace / "a.csv").write_text("1\n")

    class Running:
        finished = False

    session.run = Running()
    with pytest.raises(FileRemovalError, match="wait for it to finish"):
        remove_file(session, "a.csv")
    assert (session.workspace / "a.csv").is_file()
