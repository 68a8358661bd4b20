"""File names in an answer become links to published copies: workspace files only, never server paths."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from ui.chat.file_links import MAX_LINKS, link_files
from ui.chat.published_files import FilePublisher
from ui.web.gradio_compat import page_file_url


@pytest.fixture
def session(tmp_path: Path):
    """A session folder with its workspace, a publisher like the app's, and what was published."""
    root = tmp_path / "session"
    workspace = root / "workspace"
    (workspace / "out").mkdir(parents=True)
    (workspace / "summary.csv").write_text("species,mass\nAdelie,3700\n")
    (workspace / "out" / "chart.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (root / "secret.txt").write_text("not for the chat")
    publisher = FilePublisher(tmp_path / "published")
    published: list[str] = []

    def publish(path: str):  # what was published (an attempt the publisher refuses is not)
        copy = publisher.publish(path, inside=root)
        published.append(path)
        return copy

    return workspace, publish, published


def test_workspace_files_named_in_an_answer_become_links(session) -> None:
    workspace, publish, published = session
    text = link_files("Saved summary.csv and `out/chart.png`.", str(workspace), publish)
    assert text.startswith("Saved [summary.csv](gradio_api/file=")
    assert "and [`out/chart.png`](gradio_api/file=" in text and text.endswith(").")
    assert published == [str(workspace / "summary.csv"), str(workspace / "out" / "chart.png")]
    url = text.split("(", 1)[1].split(")", 1)[0]
    copy = url.removeprefix("gradio_api/file=")
    assert Path(copy).read_text().startswith("species,mass") and url == page_file_url(copy)


def test_an_absolute_workspace_path_is_linked_by_its_relative_name(session) -> None:
    workspace, publish, _ = session
    text = link_files(f"The file is at {workspace}/summary.csv now.", str(workspace), publish)
    assert str(workspace) not in text.split("](")[0]  # the server's path is not shown
    assert text.startswith("The file is at [summary.csv](gradio_api/file=")


@pytest.mark.parametrize("answer", [
    "See /etc/passwd.",  # a server path outside the workspace
    "See ../secret.txt and {root}/secret.txt.",  # the session's own folder, but not its workspace
    "missing.csv was never written.",
    "Download it from https://example.com/data/summary.csv today.",
    "Already [linked](summary.csv).",
    "```\nsummary.csv\n```",
])
def test_other_names_are_left_as_they_are(session, answer: str) -> None:
    workspace, publish, published = session
    answer = answer.format(root=workspace.parent)
    assert link_files(answer, str(workspace), publish) == answer
    assert published == []


def test_a_link_out_of_the_workspace_is_not_followed(session) -> None:
    workspace, publish, published = session
    os.symlink(workspace.parent / "secret.txt", workspace / "notes.txt")
    assert link_files("See notes.txt.", str(workspace), publish) == "See notes.txt."
    assert published == []


def test_without_a_publisher_nothing_is_linked(session) -> None:
    workspace, _, _ = session
    assert link_files("Saved summary.csv.", str(workspace), None) == "Saved summary.csv."


def test_the_number_of_links_is_bounded(session) -> None:
    workspace, publish, published = session
    for i in range(MAX_LINKS + 5):
        (workspace / f"f{i}.txt").write_text(str(i))
    text = link_files(" ".join(f"f{i}.txt" for i in range(MAX_LINKS + 5)), str(workspace), publish)
    assert text.count("](gradio_api/file=") == MAX_LINKS == len(published)
