"""A step's last expression in the chat, as a notebook shows it: a data frame as Gradio's own table (sortable,
scrollable, cells shown as plain text), anything else as its text. A final answer that is a data frame shows as
the same table (ui/chat/render.py).

The value is agents/shown_value.py's checked data (from the worker, or a saved step). The table is a chat
message whose content is a Gradio component message (a plain dict, so the chat's tree stays free of Gradio
objects); Gradio is imported here only when a table is shown.
"""
from __future__ import annotations

from typing import Any, Literal

from agents.shown_value import ShownValue
from ui.chat.formatting import fence

#: The table's height in pixels before it scrolls.
TABLE_HEIGHT_PX = 320
#: A value shown as text shows at most this many characters.
TEXT_CHARS = 3000


def value_label(value: ShownValue, step: int) -> str:
    """The line over a step's value: where it came from, its type and size (and how much of it shows)."""
    return frame_label(f"Out [step {step}]", value)


def answer_label(value: ShownValue) -> str:
    """The line over a final answer that is a frame."""
    return frame_label("Answer", value)


def frame_label(source: str, value: ShownValue) -> str:
    """`source`, the value's type and size (and how much of it shows)."""
    label = f"{source}: {value.type_name}"
    if value.shape is not None:
        rows, columns = value.shape
        label += f", {rows} rows × {columns} columns" if value.type_name != "Series" else f", {rows} rows"
    note = value.note()
    return f"{label}. {note}" if note else label


def table_message(value: ShownValue, label: str, answer: bool = False) -> dict[str, Any]:
    """A chat message's content showing the frame as a read-only Gradio Dataframe under `label` (`answer`: a final
    answer's, marked with the class ad-answer-table as well)."""
    import gradio as gr

    from ui.web.gradio_compat import component_message

    headers = [name or " " for name in value.columns]
    return component_message(lambda: gr.Dataframe(
        value={"headers": headers, "data": [list(row) for row in value.rows]}, headers=headers, interactive=False,
        max_height=TABLE_HEIGHT_PX, wrap=True, label=label, show_label=True, datatype=_datatypes(value),
        render=False, elem_classes=["ad-value-table", "ad-answer-table"] if answer else ["ad-value-table"]),
        "dataframe")


def _datatypes(value: ShownValue) -> list[Literal["str", "number"]]:
    """"number" for a column of numbers (sorted as numbers), "str" otherwise: cells show as plain text, never as
    Markdown or HTML (they are the worker's data)."""
    kinds: list[Literal["str", "number"]] = []
    for index in range(len(value.columns)):
        cells = [row[index] for row in value.rows if row[index] is not None]
        numeric = index > 0 and bool(cells) and all(type(c) in (int, float) for c in cells)
        kinds.append("number" if numeric else "str")
    return kinds


def text_message(value: ShownValue, step: int) -> str:
    """Markdown showing a value that is not a frame (its repr), as a notebook's Out cell."""
    text = value.text if len(value.text) <= TEXT_CHARS else value.text[:TEXT_CHARS] + "\n…"
    return f"**{value_label(value, step)}**\n\n" + fence(text)
