"""Follow-ups that refer to an earlier answer ("now double that"), for a model that is sent only its own run.

Why: the embedded model is not sent earlier messages (it copied them into new answers, right or wrong), so "now
double that" reached it with nothing to double, and it flailed for ten steps. The earlier answer is short and
known (the memory's last answer step), so it takes the place of the words that point at it ("now double 391"):
the question becomes one like those the model answers on its own. When there is none to write, the run says so at
once instead of guessing.
"""
from __future__ import annotations

import re
from typing import Any

from agents.answer_checks.kinds import as_number
from agents.memory.steps import FinalAnswerStep, MemoryStep

_REFERS = re.compile(r"\b(that|it|this|those|the\s+(previous|last|same|earlier)\s+(answer|result|number|value|one)|"
                     r"the\s+(answer|result))\b", re.I)
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'|“[^”]*”")
#: Longest earlier answer written into a task: a tiny model copies a short value, not a paragraph.
MAX_EARLIER_CHARS = 60


def refers_to_earlier(question: str) -> bool:
    """Whether `question` (the person's words) points back at an earlier answer: "that", "it", "the result"…
    outside quoted text, in a short message (a long one that says "it" is usually about its own subject)."""
    unquoted = _QUOTED.sub(" ", question)
    return bool(_REFERS.search(unquoted)) and len(unquoted.split()) <= 12


def earlier_answer(steps: list[MemoryStep]) -> str | None:
    """The last answer of an earlier run, written as code would quote it ("391", '"olleh"'); None when there is
    none, it was only a best guess after running out of steps, or it is not a short number or text."""
    for step in reversed(steps):
        if not isinstance(step, FinalAnswerStep):
            continue
        if step.guess_timing.start_time:  # a best guess, not an answer
            return None
        return written(step.output)
    return None


def written(value: Any) -> str | None:
    """A short answer as a literal the model can copy; None for anything else (a table, a long text, nothing)."""
    if value is None or isinstance(value, bool):
        return None
    number = as_number(value) if not isinstance(value, str) else None
    if number is not None:
        return str(int(number)) if number.is_integer() else repr(round(number, 6))
    if isinstance(value, str) and 0 < len(value) <= MAX_EARLIER_CHARS and "\n" not in value:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return None


def with_earlier_answer(question: str, answer: str) -> str:
    """`question` with its first reference to an earlier answer ("that", "the result") replaced by `answer`."""
    pieces = _QUOTED.split(question)
    quoted = _QUOTED.findall(question)
    for index, piece in enumerate(pieces):
        replaced, count = _REFERS.subn(answer, piece, count=1)
        if count:
            pieces[index] = replaced
            break
    return "".join(piece + (quoted[i] if i < len(quoted) else "") for i, piece in enumerate(pieces))
