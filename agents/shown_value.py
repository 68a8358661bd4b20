"""A code step's last bare expression (`summary`, `df.head()`), as a notebook shows it: a data frame as a table of
typed cells, anything else as its text.

Why a typed form: the value lives in the sandbox worker, which is hostile. The worker sends plain JSON (its repr,
and for a pandas frame the first rows as cells that are numbers or short strings, never a pickle); `from_data`
checks every field again with the limits below and keeps nothing else, so the chat (a sortable Gradio table), the
export (a Markdown table) and the model (the text, with real line breaks) all read the same checked data. The
step keeps it as `ActionStep.last_value` (`as_dict`), and a saved chat's is checked again when read.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from agents.text_tables import Table

#: A table carries at most this many rows and columns (the index counts as a column), and cells this long.
MAX_ROWS = 100
MAX_COLUMNS = 30
MAX_CELL_CHARS = 100
#: The value's text (its repr) is cut at this many characters.
MAX_TEXT_CHARS = 20_000
MAX_TYPE_CHARS = 100

Cell = str | int | float | bool | None


@dataclass
class ShownValue:
    """`type_name` (e.g. DataFrame), `text` (its repr), and for a frame its header and first rows (`columns[0]`
    is the index's name) with the whole frame's `shape` (rows, columns)."""
    type_name: str
    text: str
    columns: list[str] = field(default_factory=list)
    rows: list[list[Cell]] = field(default_factory=list)
    shape: tuple[int, int] | None = None

    @property
    def is_table(self) -> bool:
        return bool(self.columns)

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type_name, "text": self.text}
        if self.is_table:
            data["table"] = {"columns": list(self.columns), "rows": [list(r) for r in self.rows],
                             "shape": list(self.shape) if self.shape else None}
        return data

    @classmethod
    def from_data(cls, data: Any) -> ShownValue | None:
        """A value from untrusted plain data (a worker's message, a saved step); None when it is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            return None
        type_name = "".join(ch for ch in str(data.get("type") or "")[:MAX_TYPE_CHARS] if ch.isalnum() or ch in "._")
        text = data["text"]
        if len(text) > MAX_TEXT_CHARS:
            text = text[:MAX_TEXT_CHARS] + f"\n[truncated {len(text) - MAX_TEXT_CHARS} characters]"
        value = cls(type_name=type_name or "object", text=text)
        table = table_from_data(data.get("table"))
        if table is not None:
            value.columns, value.rows, value.shape = table
        return value

    def note(self) -> str:
        """How much of the frame the table shows, when not all of it ("" when it does)."""
        if self.shape is None:
            return ""
        total_rows, total_columns = self.shape
        shown_rows, shown_columns = len(self.rows), max(0, len(self.columns) - 1)
        if (shown_rows, shown_columns) == (total_rows, total_columns):
            return ""
        return f"First {shown_rows} of {total_rows} rows, {shown_columns} of {total_columns} columns."

    def to_table(self) -> Table:
        """The frame as agents/text_tables.py's Table (the Markdown export's tables)."""
        return Table(header=list(self.columns), rows=[[_cell_text(c) for c in row] for row in self.rows],
                     index_columns=1, shape=self.shape)


def table_from_data(data: Any) -> tuple[list[str], list[list[Cell]], tuple[int, int] | None] | None:
    """(columns, rows, shape) from untrusted data: strings for names, cells of the allowed types only, every
    row as long as the header, sizes capped; None for anything else."""
    if not isinstance(data, dict):
        return None
    columns, rows, shape = data.get("columns"), data.get("rows"), data.get("shape")
    if not isinstance(columns, list) or not 1 <= len(columns) <= MAX_COLUMNS or not isinstance(rows, list):
        return None
    if not all(isinstance(name, str) for name in columns) or len(rows) > MAX_ROWS:
        return None
    header = [name[:MAX_CELL_CHARS] for name in columns]
    checked: list[list[Cell]] = []
    for row in rows:
        if not isinstance(row, list) or len(row) != len(header):
            return None
        cells: list[Cell] = []
        for cell in row:
            if cell is None or type(cell) is bool:
                cells.append(cell)
            elif type(cell) is int:
                cells.append(cell if abs(cell) < 2 ** 63 else str(cell)[:MAX_CELL_CHARS])
            elif type(cell) is float:
                cells.append(cell if math.isfinite(cell) else None)
            elif type(cell) is str:
                cells.append(cell[:MAX_CELL_CHARS])
            else:
                return None
        checked.append(cells)
    size: tuple[int, int] | None = None
    if isinstance(shape, list) and len(shape) == 2 and all(type(n) is int and 0 <= n < 10 ** 12 for n in shape):
        size = (shape[0], shape[1])
    return header, checked, size


def _cell_text(cell: Cell) -> str:
    if cell is None:
        return "NaN"
    return str(cell)
