"""Published files: the copies the browser is given of a session's files (ui/chat/published_files.py), and how the
chat and the files panel use them."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from agents import events as ev
from ui.chat.published_files import FilePublisher, NotPublishable, add_urls
from ui.chat.render import Transcript
from ui.web.gradio_compat import file_url, root_url_of

PNG_A = b"\x89PNG\r\n\x1a\n" + b"A" * 64
PNG_B = b"\x89PNG\r\n\x1a\n" + b"B" * 64


@pytest.fixture
def session_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "session"
    (folder / "workspace").mkdir(parents=True)
    return folder


@pytest.fixture
def publisher(tmp_path: Path) -> FilePublisher:
    return FilePublisher(root=tmp_path / "published")


def test_a_file_is_copied_once_per_version_under_its_content_hash(session_folder: Path,
                                                                  publisher: FilePublisher) -> None:
    source = session_folder / "workspace" / "chart.png"
    source.write_bytes(PNG_A)
    first = publisher.publish(source, inside=session_folder)
    assert Path(first.path).read_bytes() == PNG_A and Path(first.path).name == "chart.png"
    assert Path(first.path).parent.name == first.digest[:32] and Path(first.path).is_relative_to(publisher.folder)
    assert publisher.publish(source, inside=session_folder) == first  # unchanged: the same copy

    source.write_bytes(PNG_B)  # saved again with new content: a new copy, the old one stays as it was
    os.utime(source, ns=(1, 10**18))
    second = publisher.publish(source, inside=session_folder)
    assert second.path != first.path and second.digest != first.digest
    assert Path(second.path).read_bytes() == PNG_B and Path(first.path).read_bytes() == PNG_A

    publisher.remove()
    assert not Path(first.path).exists() and not publisher.folder.exists()


def test_only_regular_files_inside_the_session_folder_are_published(tmp_path: Path, session_folder: Path,
                                                                      publisher: FilePublisher) -> None:
    workspace = session_folder / "workspace"
    outside = tmp_path / "secret.txt"
    outside.write_text("not yours")
    (workspace / "link.png").symlink_to(outside)
    (workspace / "etc").symlink_to(tmp_path)  # a linked folder: its files are really outside
    (workspace / "folder.png").mkdir()
    cases = {
        workspace / "link.png": "is a symbolic link",
        workspace / "etc" / "secret.txt": "outside this session's folder",
        workspace / "folder.png": "not a regular file",
        workspace / "missing.png": "cannot be read",
        outside: "outside this session's folder",
    }
    for path, why in cases.items():
        with pytest.raises(NotPublishable, match=why):
            publisher.publish(path, inside=session_folder)
    assert not publisher.folder.exists() or not any(publisher.folder.rglob("secret.txt"))


def test_urls_are_set_only_on_published_files(session_folder: Path) -> None:
    publisher = FilePublisher()  # under Gradio's upload folder, as in the app
    source = session_folder / "workspace" / "a.csv"
    source.write_text("x\n1\n")
    try:
        published = publisher.publish(source, inside=session_folder).path
        file_data = {"path": published, "url": None, "meta": {"_type": "gradio.FileData"}}
        value = [{"role": "user", "content": [{"file": file_data}]},
                 {"path": "/elsewhere/b.csv", "url": None, "meta": {"_type": "gradio.FileData"}}]
        add_urls(value, "http://host:1/app")
        assert value[0]["content"][0]["file"]["url"] == file_url(published, "http://host:1/app")
        assert value[0]["content"][0]["file"]["url"].startswith("http://host:1/app/gradio_api/file=/")
        assert value[1]["url"] is None  # not published: Gradio works it out itself
        assert add_urls(value, None) is value
    finally:
        publisher.remove()
    assert root_url_of(None) is None


def image_event(path: Path, step: int, run: str = "r1") -> ev.ArtifactCreated:
    return ev.ArtifactCreated(run_id=run, step=step, path=str(path), relative_path=path.name, artifact_kind="image")


def test_chat_images_are_snapshots_shown_once_per_step(session_folder: Path, publisher: FilePublisher) -> None:
    chart = session_folder / "workspace" / "chart.png"
    chart.write_bytes(PNG_A)
    t = Transcript(str(session_folder / "workspace"), publish=lambda p: publisher.publish(p, inside=session_folder))
    t.apply(image_event(chart, 1))
    t.apply(image_event(chart, 1))  # saved twice in one step (explicit + auto-capture): one message
    copy = session_folder / "workspace" / "figure_1.png"
    copy.write_bytes(PNG_A)
    t.apply(image_event(copy, 1))  # same figure under another name in the same step: still one
    chart.write_bytes(PNG_B)
    os.utime(chart, ns=(1, 10**18))
    t.apply(image_event(chart, 2))  # drawn again in a later step: a new message
    images = [m["content"] for m in t.messages() if isinstance(m["content"], dict)]
    assert len(images) == 2
    assert [Path(i["path"]).read_bytes() for i in images] == [PNG_A, PNG_B]  # the first still shows step 1's
    assert all(Path(i["path"]).is_relative_to(publisher.folder) for i in images)

    (session_folder / "workspace" / "evil.png").symlink_to("/etc/passwd")
    t.apply(image_event(session_folder / "workspace" / "evil.png", 3))
    assert "evil.png is a symbolic link: not shown." in t.messages()[-1]["content"]
    assert len([m for m in t.messages() if isinstance(m["content"], dict)]) == 2


def test_a_rewritten_output_file_counts_as_a_change_for_the_files_panel() -> None:
    t = Transcript()
    artifact = dict(run_id="r1", path="/ws/out.csv", relative_path="out.csv", artifact_kind="file", size_bytes=3)
    t.apply(ev.ArtifactCreated(step=1, **artifact))
    t.apply(ev.ArtifactCreated(step=2, **artifact))  # written again: the panel must publish the new version
    assert t.files_revision == 2 and len(t.files) == 1


def test_a_sessions_published_copies_have_a_cap(tmp_path: Path, session_folder: Path) -> None:
    """Each version of a file is copied outside the sandbox's disk limit, into the folder every session shares:
    code rewriting a big file step after step would fill it. Past the cap nothing more is published."""
    publisher = FilePublisher(root=tmp_path / "published", max_bytes=3 * len(PNG_A))
    source = session_folder / "workspace" / "chart.png"
    for version in range(3):
        source.write_bytes(PNG_A[:-1] + bytes([version]))
        os.utime(source, ns=(1, 10**18 + version))
        publisher.publish(source, inside=session_folder)
    source.write_bytes(PNG_B)
    os.utime(source, ns=(1, 2 * 10**18))
    with pytest.raises(NotPublishable, match="past the 0 MB of files this chat may show"):
        publisher.publish(source, inside=session_folder)
    assert len(list(publisher.folder.rglob("chart.png"))) == 3
    publisher.remove()  # a new chat starts with room again
    assert Path(publisher.publish(source, inside=session_folder).path).read_bytes() == PNG_B
