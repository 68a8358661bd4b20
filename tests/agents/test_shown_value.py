"""A step's last expression crosses from the hostile worker as plain data, checked and capped on the app's side."""
from __future__ import annotations

import pytest

from agents.executor.execution_result import from_worker
from agents.shown_value import MAX_CELL_CHARS, MAX_COLUMNS, MAX_ROWS, ShownValue


def result_with(table: object) -> dict | None:
    msg = {"op": "result", "output": "frame", "output_type": "DataFrame", "table": table}
    return from_worker(msg, [], 1000, 1000).table


def test_a_good_table_is_kept_as_checked_plain_data() -> None:
    table = {"columns": ["", "a"], "rows": [["0", 1.5], ["1", None]], "shape": [2, 1]}
    assert result_with(table) == table


@pytest.mark.parametrize("forged", [
    {"columns": ["", "a"], "rows": [["0", {"__class__": "os.system"}]]},  # an object, not a cell
    {"columns": ["", "a"], "rows": [["0", [1, 2]]]},
    {"columns": ["", "a"], "rows": [["0"]]},  # a short row
    {"columns": ["", 3], "rows": []},  # a name that is not text
    {"columns": [], "rows": []},
    {"columns": [""] * (MAX_COLUMNS + 1), "rows": []},
    {"columns": ["", "a"], "rows": [["0", 1]] * (MAX_ROWS + 1)},
    "<table>", None, ["not", "a", "table"],
])
def test_a_forged_table_is_dropped(forged: object) -> None:
    assert result_with(forged) is None


def test_cells_are_cut_and_odd_numbers_made_harmless() -> None:
    table = {"columns": ["x" * 10_000, "a"], "rows": [["y" * 10_000, float("nan")], ["1", 10 ** 40]],
             "shape": [-1, "2"]}
    checked = result_with(table)
    assert checked is not None
    assert len(checked["columns"][0]) == MAX_CELL_CHARS and len(checked["rows"][0][0]) == MAX_CELL_CHARS
    assert checked["rows"][0][1] is None and checked["rows"][1][1] == str(10 ** 40)[:MAX_CELL_CHARS]
    assert checked["shape"] is None


def test_a_saved_value_is_checked_again() -> None:
    assert ShownValue.from_data({"text": 3}) is None
    value = ShownValue.from_data({"type": "Data<Frame>\n", "text": "t" * 50_000, "table": {"columns": [1]}})
    assert value is not None and value.type_name == "DataFrame" and not value.is_table
    assert len(value.text) < 20_100
