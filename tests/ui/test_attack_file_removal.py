"""The files panel's × (the page's `delete_file` event, callable over the API too) deletes a workspace file
by name. The worker owns the workspace and may still run code between runs (a thread its last run left): a
folder of the listed file swapped for a link to a folder outside, after the listing and before the delete, must
never make the app delete a file there."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ui.session.session import Session
from ui.session.workspace_files import FileRemovalError


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    made = Session("tab", tmp_path / "session", agent_factory=lambda *a: None, max_upload_bytes=1 << 20)
    yield made
    made.remove_files()


def test_a_folder_swapped_for_a_link_after_the_listing_never_deletes_outside(
        session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = session.record.workspace
    (workspace / "out").mkdir()
    (workspace / "out" / "secret.key").write_text("the chat's")
    outside = tmp_path / "server-data"
    outside.mkdir()
    (outside / "secret.key").write_text("THE SERVER'S SIGNING KEY")
    listing = session.record.workspace_files

    def listed_then_swapped() -> list[str]:
        found = listing()
        (workspace / "out" / "secret.key").unlink()  # what the worker's thread does at that moment
        (workspace / "out").rmdir()
        os.symlink(outside, workspace / "out")
        return found

    monkeypatch.setattr(session.record, "workspace_files", listed_then_swapped)
    with pytest.raises(FileRemovalError):
        session.remove_file("out/secret.key")
    assert (outside / "secret.key").read_text() == "THE SERVER'S SIGNING KEY"
