"""How an answer the app checked is marked, in the chat and its export: unchecked, two attempts agree, or not sure
and why.

Why a mark at all: the embedded model's wrong answers looked exactly like right ones. Plain Markdown, no HTML:
the mark sits under text a model wrote, so it must not rely on markup that text could also carry.
"""
from __future__ import annotations

from agents.events import AnswerCheck

UNSURE_TITLE = "⚠️ **Not sure of this answer.**"
UNCHECKED_TITLE = "🔎 **Unchecked answer**"
AGREED_TITLE = "☑️ **Checked: two attempts agree**"


def answer_mark(check: AnswerCheck) -> str:
    """The lines shown under the answer: what was checked, what failed, and how to get a better model."""
    if check.verdict == "unsure":
        lines = [UNSURE_TITLE + " " + " ".join(check.problems)]
        if check.advice:
            lines.append(check.advice)
        return "\n\n".join(lines)
    checked = " ".join(check.passed) if check.passed else "Nothing could be checked."
    title = AGREED_TITLE if check.verdict == "agreed" else UNCHECKED_TITLE
    return f"{title} (checked by the app: {checked}) {check.advice}".strip()
