"""One evaluation question: what is asked, with which file and earlier messages, and the answer that is right."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Question:
    text: str
    expected: Any
    file: str | None = None  # the file sent with the (first) message, if any
    before: tuple[str, ...] = ()  # messages sent first in the same chat, not graded (a follow-up)
    set: str = "original"
    table: bool | None = None  # whether the graded question is about the file; None: when it comes with it
    #: "chart": right when the run made a chart (an image file) and succeeded; "" compares the answer.
    expects: str = ""

    @property
    def kind(self) -> str:
        """arithmetic, string, table or chart: what the graded question asks about."""
        if self.expects == "chart":
            return "chart"
        if self.table if self.table is not None else bool(self.file and not self.before):
            return "table"
        return "string" if '"' in self.text else "arithmetic"
