"""A step's value as the worker's frames carry it: plain data copied as JSON-able values, a pandas frame's first
rows as plain cells for the chat's table. Everything here runs in the worker (standard library and what the
code already loaded); the app checks what arrives again (agents/shown_value.py).
"""

from __future__ import annotations

from typing import Any

from .protocol import encode_json

#: A frame's table: its first rows and columns (the index counts), cells cut; sent only when its JSON is at most
#: MAX_TABLE_BYTES long. The app holds it to agents/shown_value.py's limits (the same numbers; the worker runs this
#: package on its own, so it cannot import them).
MAX_TABLE_ROWS = 100
MAX_TABLE_COLUMNS = 30
MAX_TABLE_CELL_CHARS = 100
MAX_TABLE_BYTES = 256 * 1024


def frame_table(value: Any) -> dict[str, Any] | None:
    """A pandas DataFrame's or Series' first rows as plain cells (numbers, booleans, None, short strings), for
    the chat's table; None for anything else, or when the frame will not give them (the app checks them again:
    agents/shown_value.py)."""
    kind = type(value)
    if kind.__module__.split(".")[0] != "pandas" or kind.__name__ not in ("DataFrame", "Series"):
        return None
    try:
        frame = value.to_frame() if kind.__name__ == "Series" else value
        head = frame.iloc[:MAX_TABLE_ROWS, :MAX_TABLE_COLUMNS - 1]
        names = [name for name in head.index.names if name is not None]
        columns = [_cell_text(", ".join(map(str, names)))] + [_cell_text(column) for column in head.columns]
        rows = [[_cell_text(label)] + [_plain_cell(cell) for cell in cells]
                for label, cells in zip(head.index, head.itertuples(index=False, name=None), strict=True)]
        table = {"columns": columns, "rows": rows, "shape": [int(frame.shape[0]), int(frame.shape[1])]}
        return table if len(encode_json(table)) <= MAX_TABLE_BYTES else None
    except Exception:
        return None


def _cell_text(value: Any) -> str:
    text = value if type(value) is str else str(value)
    return text[:MAX_TABLE_CELL_CHARS]


def _plain_cell(value: Any) -> Any:
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        value = value.item()
    if value is None or type(value) is bool:
        return value
    if type(value) is int:
        return value if abs(value) < 2 ** 63 else _cell_text(value)
    if type(value) is float:
        return value if value == value and abs(value) != float("inf") else None
    return _cell_text(value)


class NotPlain(Exception):
    pass


def plain(value: Any, depth: int = 0, count: list[int] | None = None) -> Any:
    """A JSON-able copy of small nested lists/tuples/dicts of scalars (numpy scalars
    become Python ones); raises NotPlain for anything else."""
    count = count if count is not None else [0]
    count[0] += 1
    if count[0] > 10000 or depth > 20:
        raise NotPlain
    t = type(value)
    if value is None or t in (bool, float, str) or (t is int and value.bit_length() < 3000):
        return value
    if t.__module__ == "numpy" and getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        return plain(value.item(), depth + 1, count)
    if t in (list, tuple):
        return [plain(v, depth + 1, count) for v in value]
    if t is dict:
        out: dict[str, Any] = {}
        for k, v in value.items():
            if type(k) is not str:
                if type(k) in (int, float, bool) or k is None:
                    k = encode_json(k)
                else:
                    raise NotPlain
            out[k] = plain(v, depth + 1, count)
        return out
    raise NotPlain
