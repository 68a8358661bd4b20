"""Scanning text the app did not write: the answer code returns (`final_answer` takes any string) is linked to
workspace files (ui/chat/file_links.py) in the app's process, and an export's Markdown, which quotes what the code
printed, is scanned for the files to zip (ui/panels/bundles.py `linked_files`). Both scans held the interpreter
for a time that grew with the square of the text: 40 KB of "[a](" took 5 s to link, an export quoting 80 KB of it
250 s to scan, freezing every visitor's page. Each must stay linear: a text ten times longer costs about ten
times as much, never a hundred."""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ui.chat.file_links import FileLinker
from ui.panels.bundles import linked_files

HOSTILE = {
    "links-never-closed": "[a](",
    "brackets": "[",
    "dotted-words": "a.",
    "backticked": "`a.",
    "scheme-like": "ab+",
}
UNIT = 4_000  # repetitions of the small text; the large one is ten times that


def _seconds(scan: Callable[[str], object], text: str) -> float:
    started = time.perf_counter()
    scan(text)
    return time.perf_counter() - started


def _check_linear(scan: Callable[[str], object], piece: str) -> None:
    small = _seconds(scan, piece * UNIT + " x.")
    large = _seconds(scan, piece * UNIT * 10 + " x.")
    # linear: about 10x; quadratic: about 100x (and seconds). The absolute bound keeps a loaded machine's noise
    # on a fast small run from failing it.
    assert large < max(30 * small, 0.5), f"{len(piece) * UNIT * 10:,} characters took {large:.2f} s " \
                                         f"({small:.3f} s for a tenth)"


@pytest.mark.parametrize("piece", list(HOSTILE.values()), ids=list(HOSTILE))
def test_linking_an_answer_costs_linear_time(tmp_path: Path, piece: str) -> None:
    linker = FileLinker(str(tmp_path), lambda path: None, lambda path: path)
    _check_linear(linker.link, piece)


@pytest.mark.parametrize("piece", list(HOSTILE.values()), ids=list(HOSTILE))
def test_finding_an_exports_links_costs_linear_time(piece: str) -> None:
    _check_linear(linked_files, piece)


def test_the_links_are_still_found_and_left_alone() -> None:
    markdown = "![chart.png](chart.png) and [out/summary table.csv](out/summary%20table.csv) [a]( [b](x(y))"
    assert linked_files(markdown) == ["chart.png", "out/summary table.csv"]


def test_an_existing_link_and_a_url_in_an_answer_are_not_linked_again(tmp_path: Path) -> None:
    (tmp_path / "report.csv").write_text("a\n")
    linker = FileLinker(str(tmp_path), lambda path: type("Copy", (), {"path": str(path)})(),
                        lambda path: f"/file={path}")
    text = "see [report.csv](https://example.org/report.csv) and https://example.org/x/report.csv"
    assert linker.link(text) == text
