"""Data frames as tables in the chat: pandas' printed text parsed into cells, shown as safe Markdown, cut when large."""
from __future__ import annotations

import pytest

from agents.text_tables import MAX_ROWS, parse_frame, split_tables, table_of_frame, text_with_tables, to_markdown
from ui.chat.formatting import format_value
from ui.chat.safe_markdown import neutralize

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def penguins():
    from ui_testlib import PENGUINS

    return pd.read_csv(PENGUINS)


def rows_of(markdown: str) -> list[list[str]]:
    """The cells of a Markdown table's lines (header first, the alignment line left out)."""
    lines = [line for line in markdown.splitlines() if line.startswith("|")]
    return [[c.strip() for c in line.strip("|").split(" | ")] for i, line in enumerate(lines) if i != 1]


def test_a_describe_table_keeps_its_labels_numbers_and_cut_columns(penguins) -> None:
    text = str(penguins.describe())
    table = parse_frame(text)
    assert table is not None
    assert [row[0] for row in table.rows] == ["count", "mean", "std", "min", "25%", "50%", "75%", "max"]
    assert "bill_length_mm" in table.header and table.rows[0][1] == "342.000000"
    markdown = to_markdown(table)
    assert "| ---: |" in markdown  # numbers are right-aligned
    if "..." in text:  # pandas left columns out at its display width: the note says so
        assert "of 5 columns shown" in markdown


def test_a_grouped_frame_takes_its_index_name_as_first_header(penguins) -> None:
    grouped = penguins.groupby("species")[["body_mass_g", "flipper_length_mm"]].mean().round(1)
    rows = rows_of(to_markdown(parse_frame(str(grouped))))
    assert rows[0] == ["species", r"body\_mass\_g", r"flipper\_length\_mm"]
    assert rows[1] == ["Adelie", "3700.7", "190.0"]


def test_a_series_is_a_two_column_table_named_by_its_footer(penguins) -> None:
    rows = rows_of(to_markdown(parse_frame(str(penguins["species"].value_counts()))))
    assert rows[0] == ["species", "count"]
    assert ["Adelie", "152"] in rows


def test_a_truncated_frame_says_how_much_is_shown(penguins) -> None:
    markdown = to_markdown(parse_frame(repr(penguins)))
    assert "10 of 344 rows" in markdown  # pandas printed 5 + 5 rows and a "..." row
    assert "| 343 | Chinstrap | Dream |" in markdown


def test_a_frame_object_is_cut_to_the_row_limit_with_a_note(penguins) -> None:
    markdown = to_markdown(table_of_frame(penguins))
    assert len(rows_of(markdown)) == MAX_ROWS + 1
    assert f"{MAX_ROWS} of 344 rows shown" in markdown
    assert format_value(penguins) == markdown


@pytest.mark.parametrize("text", [
    "The warmest city is Cairo.",
    "Adelie   152\nGentoo   124",  # aligned, but no header and no Series footer: not a frame
    "- one  item\n- two  items",
    "| a | b |\n| - | - |\n| 1 | 2 |",
])
def test_text_that_is_not_a_frame_is_left_alone(text: str) -> None:
    assert parse_frame(text) is None
    assert text_with_tables(text) == text


def test_cells_cannot_break_the_table_or_bring_markup(penguins) -> None:
    frame = pd.DataFrame({"name": ["a|b", "<img src=http://evil.test/x>", "**bold** [x](http://h)"], "n": [1, 2, 3]})
    markdown = neutralize(to_markdown(parse_frame(str(frame))))
    assert r"a\|b" in markdown
    assert "<img" not in markdown
    assert r"\*\*bold\*\* \[x\]\(http://h\)" in markdown
    assert all(len(row) == 3 for row in rows_of(markdown))


def test_frames_printed_among_other_lines_are_found(penguins) -> None:
    logs = "shape (344, 8)\n" + str(penguins["species"].value_counts()) + "\ndone\n"
    segments = split_tables(logs)
    assert [s.table is not None for s in segments] == [False, True, False]
    assert segments[0].lines == ["shape (344, 8)"] and segments[2].lines[0] == "done"
    assert segments[1].size == 5  # index name, three rows, footer


def test_an_answer_with_a_frame_in_its_text_shows_the_table(penguins) -> None:
    answer = "Mean body mass by species:\n" + str(penguins.groupby("species")[["body_mass_g"]].mean().round(1))
    shown = format_value(answer)
    assert shown.startswith("Mean body mass by species:\n\n| species | body\\_mass\\_g |")


def test_a_short_frame_whose_labels_start_next_to_its_index_is_a_table() -> None:
    """With a one-digit index pandas prints a left-aligned label one space from the index ("  species" over
    "0  Adelie"): no two-space gutter runs through every line, and `df.head(5)` came out as loose text."""
    text = ("  species     island  bill_length_mm     sex\n"
            "0  Adelie  Torgersen            39.1    male\n"
            "1  Adelie  Torgersen             NaN     NaN\n"
            "2  Gentoo     Biscoe            46.1  female")
    table = parse_frame(text)
    assert table is not None
    assert table.header == ["", "species", "island", "bill_length_mm", "sex"]
    assert table.rows[1] == ["1", "Adelie", "Torgersen", "NaN", "NaN"]
    assert parse_frame("a label across\n0  one  two\n1  three  four") is None  # not a frame's header
