"""A failed run's best guess is shown only when it is a guess at the answer, never the app's own error text.

Why: after its last step a run asks the model for its best answer from the memory; a small model's memory is
mostly errors, and it echoed them ("NameError: name 'that' is not defined", a traceback, a sandbox message), which
the chat then showed as if it were a guess at the answer.
"""
from __future__ import annotations

import re
from typing import Any

#: Text that is an error report or code, not an answer: Python's exception names and tracebacks, the sandbox's and
#: the loop's own messages, and code (a guess written as `final_answer(...)` or a fenced block).
_NOT_A_GUESS = re.compile(
    r"Traceback \(most recent call last\)|\b[A-Z][A-Za-z]*(Error|Exception)\b|\bError:|"
    r"\b(Internal error|InterpreterError|sandbox|the code (failed|stopped|raised)|Execution logs|"
    r"Last output from code|final_answer\s*\(|Observation:|Thought:|Code:)|```", re.I)


def usable_guess(value: Any) -> Any:
    """The guess when it may be shown as one; None when it is empty or carries error text or code."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text or _NOT_A_GUESS.search(text):
            return None
        return text
    return value
