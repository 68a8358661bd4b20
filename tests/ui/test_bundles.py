"""Zip bundles (Download all files; an export with the files it links) take only plain workspace files."""
from __future__ import annotations

import os
import zipfile
from pathlib import Path

from agents import AgentMemory
from agents.memory import ActionStep, TaskStep
from agents.memory.export import to_markdown
from ui.panels.bundles import NOTE_NAME, linked_files, write_bundle


def test_a_bundle_holds_the_files_and_names_what_it_left_out(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    (workspace / "out").mkdir(parents=True)
    (workspace / "chart.png").write_bytes(b"\x89PNG fake")
    (workspace / "out" / "table.csv").write_text("a,b\n1,2\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("the app's secret")
    os.symlink(secret, workspace / "innocent.csv")  # the worker swapped a listed file for a link
    os.mkfifo(workspace / "pipe.csv")  # reading it would wait forever
    bundle = write_bundle(tmp_path / "all.zip", workspace,
                          ["chart.png", "out/table.csv", "innocent.csv", "pipe.csv", "../secret.txt", "gone.txt"],
                          {"chat.md": b"# chat"})
    with zipfile.ZipFile(bundle.path) as archive:
        names = archive.namelist()
        assert archive.read("out/table.csv") == b"a,b\n1,2\n" and archive.read("chat.md") == b"# chat"
        note = archive.read(NOTE_NAME).decode()
    assert sorted(names) == sorted(["chat.md", "chart.png", "out/table.csv", NOTE_NAME])
    assert b"the app's secret" not in bundle.path.read_bytes()
    for name in ("innocent.csv", "pipe.csv", "../secret.txt", "gone.txt"):
        assert name in note
    assert not list(tmp_path.glob(".all.zip.*"))  # no partial file left


def test_an_export_bundle_takes_the_files_the_export_links(tmp_path: Path) -> None:
    memory = AgentMemory("system")
    memory.add_step(TaskStep(task="Plot", messages=[{"role": "user", "content": "Plot"}]))
    memory.add_step(ActionStep(step_number=1, code="plot()", run_id="r", logs="see [x](/etc/passwd)",
                               artifacts=["temps.png", "out/summary table.csv"], artifact_sizes=[3, 3]))
    markdown = to_markdown(memory)
    assert linked_files(markdown) == ["temps.png", "out/summary table.csv"]  # not the text's look-alike link


def test_an_export_bundle_takes_the_uploads_no_answer_links() -> None:
    """The person's data files are in "Markdown + its files" even where the Markdown does not link them; a
    hostile upload name (a path) is not followed."""
    from ui.panels.bundles import export_files

    turns = [{"uploads": [{"name": "penguins.csv"}, {"name": "../secret"}, "junk"]}, {"uploads": None},
             {"uploads": [{"name": "chart.png"}, {"name": "notes.txt"}]}]
    assert export_files("![chart.png](chart.png)", turns) == ["chart.png", "penguins.csv", "notes.txt"]


def test_files_named_as_people_name_them_are_zipped(tmp_path: Path) -> None:
    """A browser's "report (1).csv", a "+" or "," or "'" or "&" in a name: "Download all files" left them out as
    "not a plain name" (only letters, digits, dots, dashes and spaces passed)."""
    workspace = tmp_path / "workspace"
    (workspace / "Q3 & Q4").mkdir(parents=True)
    names = ["report (1).csv", "a+b, final.txt", "O'Brien.xlsx", "Q3 & Q4/sales_2024 [draft].csv", "café.txt"]
    for name in names:
        (workspace / name).write_text(name)
    bundle = write_bundle(tmp_path / "all.zip", workspace, names)
    with zipfile.ZipFile(bundle.path) as archive:
        assert sorted(archive.namelist()) == sorted(names)
        assert all(archive.read(name).decode() == name for name in names)
    assert bundle.left_out == []


def test_names_that_would_not_unpack_as_themselves_are_left_out(tmp_path: Path) -> None:
    """What the wider rule still refuses: a hidden name, `..`, a drive or backslash, a trailing dot or space (some
    systems drop it, so two names unpack as one), characters Windows refuses."""
    from ui.panels.bundles import is_plain_relative
    for name in (".env", "a/../b.csv", "C:evil.csv", "a\\b.csv", "report.csv.", "report.csv ", "what?.csv",
                 "a|b.csv", "/etc/passwd", "", "a//b.csv"):
        assert not is_plain_relative(name), name
