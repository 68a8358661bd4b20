"""Agreement of two independent attempts: the run's answer against a second attempt's, made afresh.

Why: the other checks can pass for a wrong plain answer (a number or a name computed by right-looking code about
the right terms). A second attempt that never saw the first (the same question sent afresh, sampled instead of
greedy) rarely lands on the same wrong value by chance; when it agrees, the app says so, and when it does not,
the person sees both values. It costs a model call, so it is made only where it can add something: the other
checks passed and the answer is a plain value (not a chart, a table or a long text) they cannot confirm.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from agents.answer_checks.follow_up import written
from agents.answer_checks.kinds import AnswerKind, as_number


@dataclass(frozen=True)
class Attempt:
    """A second attempt's outcome: whether it answered, with what, and why not."""
    answered: bool
    value: Any = None
    error: str = ""  # why it gave no answer ("no code", an error type, "stopped")
    stopped: bool = False  # the person pressed Stop: nothing is concluded from it
    code: str = ""  # the code that gave it


def same_code(first: str, second: str) -> bool:
    """The same code, spacing aside: a second attempt that wrote the first one's code again computes nothing new
    (the re-run already showed that code gives that value), so its agreement confirms nothing more."""
    return bool(first.strip()) and "".join(first.split()) == "".join(second.split())


def worth_a_second_attempt(kind: AnswerKind, value: Any) -> bool:
    """Whether a second attempt can confirm `value`: a plain number or short name, for any question but a chart
    (a chart is checked by being made; a long text or a table would rarely come back the same word for word)."""
    return kind != "chart" and written(value) is not None


def agrees(first: Any, second: Any) -> bool:
    """The same value: numbers as numbers (`same_value`), names ignoring case and surrounding space and quotes."""
    if same_value(first, second):
        return True
    if isinstance(first, str) and isinstance(second, str):
        return _name(first) == _name(second)
    return False


def _name(text: str) -> str:
    return text.strip().strip("'\"").strip().casefold()


def same_value(first: Any, second: Any) -> bool:
    """Equal answers, numbers compared as numbers (1e-9 apart at most, NaN equal to NaN)."""
    a, b = as_number(first), as_number(second)
    if a is not None and b is not None:
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    try:
        return bool(first == second) and type(first) is type(second)
    except (TypeError, ValueError):  # e.g. arrays, whose == is not one truth value
        return repr(first) == repr(second)
