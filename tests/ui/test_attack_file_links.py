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

from agents.memory.inert_markdown import block, code_span, code_spans, fenced, inline, prose
from ui.chat.file_links import FileLinker
from ui.chat.safe_markdown import neutralize
from ui.panels.bundles import linked_files

HOSTILE = {
    "links-never-closed": "[a](",
    "brackets": "[",
    "dotted-words": "a.",
    "backticked": "`a.",
    "scheme-like": "ab+",
    "backtick-pairs": "``",
    "fence-lines": "```\n",
    "lt-in-code": "`a<",
}
UNIT = 4_000  # repetitions of the small text; the large one is ten times that


def _seconds(scan: Callable[[str], object], text: str) -> float:
    """The CPU time `scan` takes on `text` (the process's own: other work on a loaded machine does not count)."""
    started = time.process_time()
    scan(text)
    return time.process_time() - started


def _check_linear(scan: Callable[[str], object], piece: str) -> None:
    scan(piece * 10)  # warm: a parser built on first use is not the scan's cost
    small = _seconds(scan, piece * UNIT + " x.")
    large = _seconds(scan, piece * UNIT * 10 + " x.")
    # linear: about 10x; quadratic: about 100x (and seconds). The absolute bound keeps a loaded machine's noise
    # on a fast small run from failing it.
    assert large < max(40 * small, 1.0), f"{len(piece) * UNIT * 10:,} characters took {large:.2f} s " \
                                         f"({small:.3f} s for a tenth)"


@pytest.mark.parametrize("piece", list(HOSTILE.values()), ids=list(HOSTILE))
def test_linking_an_answer_costs_linear_time(tmp_path: Path, piece: str) -> None:
    def nothing_published(path: str):
        raise FileNotFoundError(path)  # as the session's publisher says of a name that is no file

    linker = FileLinker(str(tmp_path), nothing_published, lambda path: path)
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


#: What renders text nobody in the app wrote: the chat (`neutralize`: answers, thoughts, tool results) and the
#: exports (inert_markdown: everything quoted). Inline code was found with `(`+)(.+?)\\1`, and the fence and
#: span delimiters grown one backtick at a time: 20,000 backticks took 28 s in an export's prose.
RENDERERS: dict[str, Callable[[str], object]] = {
    "neutralize": lambda text: neutralize(text + "<"), "prose": prose, "inline": inline, "block": block,
    "code_span": code_span, "fenced": fenced}


@pytest.mark.parametrize("piece", list(HOSTILE.values()), ids=list(HOSTILE))
@pytest.mark.parametrize("renderer", list(RENDERERS), ids=list(RENDERERS))
def test_rendering_hostile_text_costs_linear_time(renderer: str, piece: str) -> None:
    _check_linear(RENDERERS[renderer], piece)


def test_inline_code_is_still_found_as_commonmark_reads_it() -> None:
    line = "a `x<y` b ``c ` d`` e ``` f ` g"
    assert [line[start:end] for start, end in code_spans(line)] == ["`x<y`", "``c ` d``"]
    assert neutralize("run `a<b` or <b>") == "run `a\uff1cb` or &lt;b>"
    assert prose("see `[x](y)` and [x](y)") == "see `[x]\u200b(y)` and \\[x](y)"
    assert fenced("a ```` b").startswith("`````\n") and code_span("a`b") == "``a`b``"
