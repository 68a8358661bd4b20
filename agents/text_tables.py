"""Data frames as Markdown tables: pandas' printed text (logs, a final answer's repr) and frame objects.

Shared by the chat (ui/chat/formatting.py, step_output.py) and the Markdown export (agents/memory/export.py),
so an exported answer shows the table the chat showed.

Why parse text: a DataFrame the sandboxed code returns crosses the process boundary as its repr (the worker
sends plain data or text, agents/executor/execution.py), and what it prints reaches the UI as log text, so
the chat only ever has pandas' fixed-width text. Rendered as Markdown that text loses its spaces and reads as
a jumble. Here its columns are found from the gutters (runs of two or more spaces that every line shares),
and a block that does not fit that grid is left as text. The table is Markdown whose cells escape every
Markdown character (and `|`); raw HTML is left to the chat's ui/chat/safe_markdown.py, which every chat
message passes through. Large tables are cut, with a note saying how much is shown.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: A table shows at most this many rows and columns (the rest is counted in its note).
MAX_ROWS = 20
MAX_COLUMNS = 12
MAX_CELL_CHARS = 60
#: Text longer than this (lines) is not searched for tables.
MAX_LINES = 400
#: At most this many lines are parsed in all while looking for tables in one text (bounds the retries).
PARSE_BUDGET_LINES = 2000

_GUTTER = re.compile(r"\S {2,}\S")
_HEADER_ONLY = re.compile(r"^ {2,}\S")
_WORD = re.compile(r"[^ ]+")
_SHAPE = re.compile(r"^\[(\d+) rows x (\d+) columns\]$")
_SERIES_FOOTER = re.compile(r"^(?:(?:Name|Length|Freq): .*, )*dtype: [\w\[\], ]+$")
_NUMBER = re.compile(r"^[-+]?(?:\d[\d,_]*)?(?:\.\d+)?(?:[eE][-+]?\d+)?%?$")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]{}()#+!|~$])")
_ELLIPSIS = {"...", "..", "…"}
_MISSING = {"NaN", "nan", "None", "<NA>", "NaT", ""}


@dataclass
class Table:
    """Header cells, rows of cells, and what the source said about its size."""
    header: list[str]
    rows: list[list[str]]
    index_columns: int = 1
    shape: tuple[int, int] | None = None  # pandas' "[N rows x M columns]" footer
    caption: str = ""  # a Series' "Name: ..., dtype: ..." line
    notes: list[str] = field(default_factory=list)
    complete: bool = True  # False: the text was cut inside the table, so its size is unknown


# ----- pandas' text -> Table ---------------------------------------------------------------------------
def _column_spans(lines: list[str]) -> list[tuple[int, int]]:
    """[start, end) of each column: the stretches between positions where every line has two or more spaces."""
    width = max(len(line) for line in lines)
    used = bytearray(width)  # 1 where some line has a character
    for line in lines:
        for word in _WORD.finditer(line):
            used[word.start():word.end()] = b"\x01" * (word.end() - word.start())
    blank = [not flag for flag in used]
    spans: list[tuple[int, int]] = []
    start: int | None = None
    gap = 0
    for i in range(width):
        if blank[i]:
            gap += start is not None
            continue
        if start is None:
            start = i
        elif gap >= 2:  # a gutter: the column before it ends
            spans.append((start, i - gap))
            start = i
        gap = 0
    if start is not None:
        spans.append((start, width - gap))
    return spans


def _label_aligned_spans(lines: list[str]) -> list[tuple[int, int]]:
    """The columns, also where a left-aligned column label comes within one space of the index: with a
    one-digit index pandas prints "  species" over "0  Adelie", so no two-space gutter runs through every
    line. Then the columns are found in the values (the lines after the labels) and widened to hold their
    labels, if each label falls within one column."""
    spans = _column_spans(lines)
    if len(lines) < 3:
        return spans
    values = _column_spans(lines[1:])
    if len(values) <= len(spans):
        return spans
    widened = list(values)
    for word in _WORD.finditer(lines[0]):
        inside = [i for i, (a, b) in enumerate(values) if word.start() < b and a < word.end()]
        if len(inside) != 1:
            return spans  # a label across two columns: not a frame's header, keep the plain reading
        a, b = widened[inside[0]]
        widened[inside[0]] = (min(a, word.start()), max(b, word.end()))
    if any(widened[i][1] >= widened[i + 1][0] for i in range(len(widened) - 1)):
        return spans
    return widened


def _cells(line: str, spans: list[tuple[int, int]]) -> list[str]:
    return [line[a:b].strip() for a, b in spans]


def parse_frame(text: str) -> Table | None:
    """The table in pandas' printed form of a DataFrame or Series; None when `text` is not one."""
    lines = [line.rstrip() for line in text.strip("\n").split("\n")]
    shape = caption = None
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and (found := _SHAPE.match(lines[-1].strip())):
        lines.pop()
        shape = (int(found.group(1)), int(found.group(2)))
        while lines and not lines[-1].strip():
            lines.pop()
    elif lines and _SERIES_FOOTER.match(lines[-1].strip()):
        caption = lines.pop().strip()
    if len(lines) < 2 or len(lines) > MAX_LINES or any(not line.strip() for line in lines):
        return None
    if any(line.lstrip().startswith(("|", "```", "~~~")) for line in lines):  # Markdown's own table or code
        return None
    spans = _label_aligned_spans(lines)
    if len(spans) < 2:
        return None
    grid = [_cells(line, spans) for line in lines]
    columns = len(spans)
    headers: list[list[str]] = []
    while grid and not grid[0][0] and any(grid[0][1:]):  # column labels: nothing where the index goes
        headers.append(grid.pop(0))
    if not headers and len(grid) > 2 and grid[0][-1] and _names_only(grid[1]):
        headers.append(grid.pop(0))  # a frame whose columns have a name: it stands where the index goes
    index_names: list[str] = []
    if grid and len(grid) > 1 and _names_only(grid[0]):  # the index's name(s), nothing in the values
        index_names = [cell for cell in grid.pop(0) if cell]
    if not grid or (not headers and caption is None):
        return None  # a frame has column labels, a Series says what it is in its footer
    if not grid[0][0] or any(len([c for c in row if c]) < 2 and not _is_ellipsis(row) for row in grid):
        return None
    index_columns = max(1, len(index_names))
    header = [" ".join(p for p in parts if p) for parts in zip(*headers, strict=True)] if headers else [""] * columns
    for i, name in enumerate(index_names[:columns]):
        header[i] = name
    if not headers and caption:
        named = re.match(r"^Name: (.*?), ", caption)
        header[-1] = named.group(1) if named else ""
    return Table(header=header, rows=grid, index_columns=index_columns, shape=shape, caption=caption or "")


def _names_only(cells: list[str]) -> bool:
    """Leading names and nothing after them (the line pandas prints with the index's names)."""
    named = 0
    while named < len(cells) and cells[named]:
        named += 1
    return 0 < named < len(cells) and not any(cells[named:])


def _is_ellipsis(row: list[str]) -> bool:
    return all(cell in _ELLIPSIS or not cell for cell in row)


@dataclass
class Segment:
    """A stretch of printed text: a table, or lines left as they are."""
    table: Table | None = None
    lines: list[str] = field(default_factory=list)
    size: int = 0  # the lines of the text it stands for

    def __post_init__(self) -> None:
        self.size = self.size or len(self.lines)


def split_tables(text: str) -> list[Segment]:
    """`text` cut into plain lines and the data frames printed among them (a region of lines that share
    gutters, with the index-name line above a Series and the footers pandas prints below)."""
    lines = text.split("\n")
    if len(lines) > MAX_LINES:
        return [Segment(lines=lines)]
    segments: list[Segment] = []
    plain: list[str] = []
    i = work = 0
    while i < len(lines):
        if work > PARSE_BUDGET_LINES:  # searched enough: the rest stays text
            plain.extend(lines[i:])
            break
        end = _region_at(lines, i)
        table = None
        # The frame may end before the run of aligned lines does: try a few ends, within a bound on the work.
        work += 1
        for cut in range(end, max(i + 1, end - 3), -1):
            if work > PARSE_BUDGET_LINES:
                break
            work += cut - i
            table = parse_frame("\n".join(lines[i:cut]))
            if table is not None:
                end = cut
                break
        if table is None:
            plain.append(lines[i])
            i += 1
            continue
        if plain:
            segments.append(Segment(lines=plain))
            plain = []
        segments.append(Segment(table=table, size=end - i))
        i = end
    if plain:
        segments.append(Segment(lines=plain))
    return segments


def _region_at(lines: list[str], start: int) -> int:
    """The end of the run of frame-like lines that could start at `start` (start itself when none)."""
    def griddy(k: int) -> bool:  # columns apart, a header over an empty index, or a row of "..."
        line = lines[k] if k < len(lines) else ""
        return bool(_GUTTER.search(line.strip()) or _HEADER_ONLY.match(line) or line.strip() in _ELLIPSIS)

    def single(k: int) -> bool:
        return k < len(lines) and len(lines[k].split()) == 1

    end = start
    if single(end) and griddy(end + 1):  # a Series' index name above its rows
        end += 1
    elif griddy(end) and single(end + 1) and griddy(end + 2):  # a frame's header, then its index name
        end += 2
    while griddy(end):
        end += 1
    if end == start:
        return start
    if end < len(lines) and _SERIES_FOOTER.match(lines[end].strip()):
        end += 1
    elif end + 1 < len(lines) and not lines[end].strip() and _SHAPE.match(lines[end + 1].strip()):
        end += 2
    return end


# ----- frame objects -> Table ----------------------------------------------------------------------
def table_of_frame(value: Any) -> Table | None:
    """A pandas DataFrame or Series (duck-typed: no pandas import here) as a Table of its first rows."""
    if hasattr(value, "to_frame") and not hasattr(value, "columns"):
        try:
            value = value.to_frame()
        except Exception:  # an odd Series: leave it to the caller's fallback
            return None
    if not all(hasattr(value, name) for name in ("columns", "index", "head", "shape")):
        return None
    try:
        rows_total, columns_total = (int(n) for n in value.shape)
        head = value.head(MAX_ROWS + 1)
        names = [str(n) if n is not None else "" for n in getattr(value.index, "names", [None])]
        header = names + [str(c) for c in value.columns]
        rows = [[str(label) for label in (key if isinstance(key, tuple) else (key,))] + [str(v) for v in row]
                for key, row in zip(head.index, head.itertuples(index=False, name=None), strict=True)]
    except Exception:  # whatever pandas raises for an unusual frame: shown as text instead
        return None
    return Table(header=header, rows=rows, index_columns=len(names), shape=(rows_total, columns_total))


# ----- Table -> Markdown ---------------------------------------------------------------------------
def escape_cell(text: str) -> str:
    text = " ".join(str(text).split())
    if len(text) > MAX_CELL_CHARS:
        text = text[:MAX_CELL_CHARS - 1] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;")  # a cell is text wherever the table is shown
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def to_markdown(table: Table, max_rows: int = MAX_ROWS, max_columns: int = MAX_COLUMNS) -> str:
    """A GFM table (numbers right-aligned), cut to `max_rows` x `max_columns`, with a note of what is left out."""
    width = max(len(table.header), *(len(r) for r in table.rows)) if table.rows else len(table.header)
    shown_columns = min(width, max_columns)
    header = (table.header + [""] * width)[:shown_columns]
    rows = [(row + [""] * width)[:shown_columns] for row in table.rows[:max_rows]]
    align = []
    for c in range(shown_columns):
        values = [row[c] for row in rows if row[c] not in _ELLIPSIS and row[c] not in _MISSING]
        numeric = c >= table.index_columns and values and all(_NUMBER.match(v) and any(ch.isdigit() for ch in v)
                                                              for v in values)
        align.append("---:" if numeric else ":---")
    out = ["| " + " | ".join(escape_cell(h) or " " for h in header) + " |", "| " + " | ".join(align) + " |"]
    out += ["| " + " | ".join(escape_cell(cell) for cell in row) + " |" for row in rows]
    notes = list(table.notes)
    data_header = [h for h in (table.header + [""] * width)[table.index_columns:width] if h not in _ELLIPSIS]
    shown_columns_count = len([h for h in header[table.index_columns:] if h not in _ELLIPSIS])
    shown_rows = sum(1 for row in rows if not _is_ellipsis(row))
    total_rows, total_columns = table.shape or (sum(1 for r in table.rows if not _is_ellipsis(r)), len(data_header))
    cut = []
    if not table.complete and not table.shape:
        cut.append(f"the first {shown_rows} rows")
    elif shown_rows < total_rows:
        cut.append(f"{shown_rows} of {total_rows:,} rows")
    if shown_columns_count < total_columns:
        cut.append(f"{shown_columns_count} of {total_columns:,} columns")
    if cut:
        notes.append(" and ".join(cut) + " shown")
    text = "\n".join(out)
    return text + ("\n\n*" + "; ".join(notes) + "*" if notes else "")


def text_with_tables(text: str) -> str:
    """Markdown `text` (an answer) with the data frames printed in it as tables; text holding a code block
    or a Markdown table is left as it is."""
    if "```" in text or "~~~" in text or "  " not in text:
        return text
    segments = split_tables(text)
    if all(segment.table is None for segment in segments):
        return text
    return "\n\n".join(to_markdown(s.table) if s.table is not None else "\n".join(s.lines).strip("\n")
                       for s in segments).strip()
