"""Attacks on the zip bundles (Download all files; an export with its files) by code in the sandbox, which owns
the workspace, and by a visitor who asks for bundles again and again."""
from __future__ import annotations

import threading
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.link_swapping import swapping
from tests.waiting import wait_until
from ui.panels import bundles
from ui.panels.bundles import BundleBusy, write_bundle


def test_a_big_file_is_streamed_into_the_zip_not_read_into_memory(tmp_path: Path) -> None:
    """A visitor's loop over "Download all files" (concurrency unlimited) of a chat holding big files must not
    hold each file whole in the server's memory: a few such calls at once would exhaust it."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    size = 48 << 20
    with open(workspace / "big.bin", "wb") as out:
        out.truncate(size)  # 48 MB of zeros: what code in the sandbox can write in a moment
    tracemalloc.start()
    try:
        bundle = write_bundle(tmp_path / "all.zip", workspace, ["big.bin"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    with zipfile.ZipFile(bundle.path) as archive:
        assert archive.getinfo("big.bin").file_size == size
    assert bundle.included == ["big.bin"]
    assert peak < 8 << 20, f"writing the bundle held {peak:,} bytes of Python memory at once"


def test_a_second_bundle_of_the_same_files_while_one_is_written_is_refused(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Two bundles of one target at once (a double click, a loop over the API) would write the same files twice
    over, and the second would be a second copy of the work: it is refused with what to do."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "a.txt").write_text("a")
    copying, release = threading.Event(), threading.Event()
    real_copy = bundles._copy

    def slow_copy(*args: Any) -> int:
        copying.set()
        release.wait(30)
        return real_copy(*args)

    monkeypatch.setattr(bundles, "_copy", slow_copy)
    results: list[Any] = []
    first = threading.Thread(target=lambda: results.append(write_bundle(tmp_path / "all.zip", workspace, ["a.txt"])))
    first.start()
    try:
        wait_until(copying.is_set, what="the first bundle to be written")
        with pytest.raises(BundleBusy):
            write_bundle(tmp_path / "all.zip", workspace, ["a.txt"])
        other = write_bundle(tmp_path / "other.zip", workspace, [])  # another target is not held up
        assert other.path.exists()
    finally:
        release.set()
        first.join(30)
    assert results and results[0].included == ["a.txt"]
    assert write_bundle(tmp_path / "all.zip", workspace, ["a.txt"]).included == ["a.txt"]  # free again


def test_a_file_swapped_for_a_link_while_zipped_never_brings_the_outside_file(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "inside.txt").write_text("inside")
    secret = tmp_path / "secret.txt"
    secret.write_text("THE-APP-SECRET")
    seen: set[str] = set()
    with swapping(workspace, "report.txt", workspace / "inside.txt", secret):
        for round_ in range(60):
            bundle = write_bundle(tmp_path / "all.zip", workspace, ["report.txt"])
            with zipfile.ZipFile(bundle.path) as archive:
                content = archive.read("report.txt").decode() if "report.txt" in archive.namelist() else ""
            seen.add("included" if bundle.included else "left out")
            assert "THE-APP-SECRET" not in content, f"round {round_}"
            assert b"THE-APP-SECRET" not in bundle.path.read_bytes()
    assert seen  # the race ran (each round one way or the other)


@pytest.mark.parametrize("taken", ["chat.md", "CHAT.md", bundles.NOTE_NAME, "left-out.TXT"])
def test_a_workspace_file_named_as_the_bundles_own_file_never_replaces_it(tmp_path: Path, taken: str) -> None:
    """The code can name a file as the export itself (or the note) and link it: a second zip entry of that name is
    the one an unzip leaves (or asks about), so the person would open the code's text as the app's export."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / taken).write_text("[click me](https://evil.example/) the code's own text")
    (workspace / "chart.png").write_bytes(b"\x89PNG")
    bundle = write_bundle(tmp_path / "export.zip", workspace, [taken, "chart.png"], {"chat.md": b"# the export"})
    with zipfile.ZipFile(bundle.path) as archive:
        names = archive.namelist()
        assert len({name.casefold() for name in names}) == len(names), names  # each name once, whatever the case
        assert archive.read("chat.md") == b"# the export"
        assert b"the code's own text" not in b"".join(archive.read(name) for name in names)
    assert taken not in bundle.included and "chart.png" in bundle.included


@pytest.mark.parametrize("name", ["report.csv\n", "ok.csv\nfake.csv: everything else is fine", "a\rb.csv",
                                  "bidi\u202etxt.csv"])
def test_a_file_name_with_a_line_break_or_control_is_not_zipped_and_adds_no_line_to_the_note(
        tmp_path: Path, name: str) -> None:
    """A name ending in a newline passed the plain-name check (`$` matches before a final newline): it went into
    the zip as is (an entry most unzips cannot write), and a left-out name could write lines of its own into the
    note the person reads to learn what is missing."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    try:
        (workspace / name.split("\n")[0]).write_text("data")
        if "\n" not in name:
            (workspace / name).write_text("data")
    except OSError:
        pytest.skip("this file system refuses the name")
    assert not bundles.is_plain_relative(name)
    bundle = write_bundle(tmp_path / "all.zip", workspace, [name])
    with zipfile.ZipFile(bundle.path) as archive:
        assert archive.namelist() == [bundles.NOTE_NAME]
        note = archive.read(bundles.NOTE_NAME).decode()
    assert note.count("\n") == 2 and note.splitlines()[1].endswith(": not a plain name inside the workspace")
    assert bundle.included == []
