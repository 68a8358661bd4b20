"""What kind of answer a question asks for, and whether an answer is of that kind.

Why: the embedded 135M model often answers with a value of the wrong kind (a ticker symbol for "plot price over
time", a county name for "which column has the largest mean"), and such an answer looks as plain as a right one.
The kind is read from the person's words alone (no model), so the check costs nothing and cannot be talked round.
"""
from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass
from typing import Any, Literal

AnswerKind = Literal["chart", "column", "count", "percentage", "number", "any"]

_CHART = re.compile(r"\b(plot|chart|graph|histogram|draw|visuali[sz]e|scatter|boxplot|heat ?map|bar ?plot)\b", re.I)
#: "which column", "what field", "which of the columns", "which one of the columns", and with up to two words
#: between ("which numeric column", "which of the numerical columns", "what data field": fresh-35's unmarked miss).
_COLUMN = re.compile(r"\b(which|what)\s+(?:one\s+)?(?:of\s+the\s+)?"
                     r"(?:(?!(?:is|are|was|were|does|do|did|has|have|in|of|the|a|an)\b)[a-z-]+\s+){0,2}?"
                     r"(column|field|variable|feature)s?\b", re.I)
_COUNT = re.compile(r"^\s*(how\s+many|count\b|number\s+of\b|what\s+is\s+the\s+number\s+of\b)", re.I)
_PERCENT = re.compile(r"%|\bper\s?cent(age)?\b", re.I)
#: Arithmetic or a statistic: an answer of a number (a "which ... has the most" question asks for a name).
_NUMBER = re.compile(r"\d\s*[-+*/x^]\s*\d|\b(plus|minus|times|divided|multipl\w*|power|square\s+root|sum|total|"
                     r"mean|average|median|std|standard\s+deviation|variance|double|triple|half|twice)\b", re.I)
_EXTREME = re.compile(r"\b(max(imum)?|min(imum)?|highest|lowest|largest|smallest|biggest|greatest)\b", re.I)
_NAME_WANTED = re.compile(r"^\s*(which|who|where|name)\b|\bmost\s+(common|frequent|often)\b|\bappears?\s+most\b", re.I)


@dataclass(frozen=True)
class KindProblem:
    """Why an answer is not of the kind asked for, in words the person reads."""
    kind: AnswerKind
    message: str


def expected_kind(question: str) -> AnswerKind:
    """The kind of answer `question` (the person's words, not the files' listing) asks for; "any" when unsure."""
    text = question.strip()
    if _CHART.search(text):
        return "chart"
    if _COLUMN.search(text):
        return "column"
    if _COUNT.search(text):
        return "count"
    if _PERCENT.search(text):
        return "percentage"
    if _NAME_WANTED.search(text):
        return "any"
    if _NUMBER.search(text) or _EXTREME.search(text):
        return "number"
    return "any"


def as_number(value: Any) -> float | None:
    """The answer as a number: a number, or text that is one number (with a % or thousands commas); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Real):
        return float(value)
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # a numpy scalar
        try:
            return as_number(value.item())
        except (TypeError, ValueError):
            return None
    if isinstance(value, str):
        cleaned = value.strip().rstrip("%").replace(",", "").strip()
        try:
            return float(cleaned)
        except ValueError:
            return None
    return None


def kind_problem(kind: AnswerKind, value: Any, charts_made: int, columns: tuple[str, ...] = ()) -> KindProblem | None:
    """Why `value` does not answer a question of `kind` (None when it does, or when the kind is "any").

    `charts_made`: images the run saved; `columns`: the uploaded files' columns, when the task listed them."""
    if kind == "chart":
        if charts_made:
            return None
        return KindProblem(kind, "A chart was asked for and none was made.")
    if kind == "column":
        name = str(value).strip().strip("'\"") if isinstance(value, str) else None
        if name is not None and (not columns or name in columns):
            return None
        listed = f" ({', '.join(columns[:12])})" if columns else ""
        return KindProblem(kind, f"A column was asked for, and {_shown(value)} is not one of the file's "
                                 f"columns{listed}.")
    if kind in ("count", "number", "percentage"):
        number = as_number(value)
        if number is None or math.isnan(number):
            wanted = {"count": "A count", "number": "A number", "percentage": "A percentage"}[kind]
            return KindProblem(kind, f"{wanted} was asked for, and the answer is {_shown(value)}.")
        if kind == "count" and (number < 0 or not float(number).is_integer()):
            return KindProblem(kind, f"A count was asked for, and {_shown(value)} is not a whole number of "
                                     "things.")
    return None


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    if value is None:
        return "nothing"
    return text if len(text) <= 60 else text[:57] + "…"
