"""The answer a question's own terms determine, worked out by the app, and the bounds they put on any answer.

Why: the other checks ask whether the code *uses* the question's terms, and a small model's code can use them and
still do something else: `96 * 25` for "25% of 96" (2400: the magnitude of a percentage), `len("banana")` for
"how many times does n appear in banana" when the letter sits elsewhere in the code. Where the question states
everything the answer depends on (a percentage of a number, a letter counted in a word, the length of a word, one
arithmetic operation on numbers it gives), the app computes the answer itself, with no model, and an answer that
differs cannot be shown as if it were right. Where it does not (a percentage worded some other way), the terms
still bound the answer: under 100% of a number is at most that number. Read from the person's words alone; a
question the rules do not read exactly gives nothing (no check rather than a wrong one).
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents.answer_checks.kinds import as_number

_NUM = r"(-?\d+(?:\.\d+)?)"
_NUMBER = re.compile(r"(?<![\w.])" + _NUM + r"(?![\w.]*\d)")
_PERCENT_OF = re.compile(_NUM + r"\s*(?:%|per\s?cent)\s+of\s+(?:the\s+(?:number|value)\s+)?" + _NUM, re.I)
_PERCENT_NUMBER = re.compile(_NUM + r"\s*(?:%|per\s?cent\b)", re.I)
_COUNT_QUESTION = re.compile(r"\bhow\s+(?:many|often)\b|\bcount\b|\bnumber\s+of\b|\boccurrences?\b|\bfrequency\b",
                             re.I)
_QUOTED = re.compile(r"\"([^\"\n]{1,200})\"|“([^”\n]{1,200})”|(?<![A-Za-z])'([^'\n]{1,200})'(?![A-Za-z])")
#: Ways a question names the one letter it counts: "the letter s", "a's", "'o'", "how many s in", "does n appear".
_LETTER_FORMS = (
    re.compile(r"\b(?:letter|character|char)\s+['\"“]?([A-Za-z])['\"”]?(?![\w])", re.I),
    re.compile(r"(?<![\w'])['\"“]?([A-Za-z])['\"”]?'s\b"),
    re.compile(r"\bhow\s+many\s+['\"“]?([A-Za-z])['\"”]?s?\s+(?:(?:are|is|there|do|does|we|you|have|has)\s+)*in\b",
               re.I),
    re.compile(r"\b(?:does|do|is|did)\s+(?:the\s+(?:letter\s+)?)?['\"“]?([A-Za-z])['\"”]?\s+"
               r"(?:appear|occur|show\s+up|come\s+up|turn\s+up|feature)", re.I),
    re.compile(r"\bcount\s+(?:of\s+|the\s+)?(?:letter\s+)?['\"“]?([A-Za-z])['\"”]?(?:'?s)?\s+in\b", re.I),
    re.compile(r"\b(?:number|occurrences?|frequency)\s+of\s+(?:the\s+(?:letter\s+)?)?['\"“]?([A-Za-z])['\"”]?"
               r"(?:'?s)?\s+in\b", re.I),
)
#: The word a letter is counted in, when it is not quoted: "the word banana", "in mississippi".
_WORD_FORMS = (
    re.compile(r"\bword\s+([A-Za-z]{2,})\b", re.I),
    re.compile(r"\bin\s+([A-Za-z]{2,})\b", re.I),
)
_NOT_A_WORD = {"the", "word", "it", "this", "that", "there", "total", "all", "a", "an", "string", "text", "here",
               "table", "file", "column", "data", "order"}
_LENGTH = re.compile(r"\bhow\s+many\s+(characters|chars|letters)\b|\b(?:length|number\s+of\s+(characters|letters))\b",
                     re.I)
Binary = Callable[[float, float], float]
Unary = Callable[[float], float]
#: One arithmetic operation on two numbers the question gives: (pattern, what it computes, how it is written).
_BINARY: tuple[tuple[re.Pattern[str], Binary, str], ...] = (
    (re.compile(_NUM + r"\s*(?:\*|x|×|times|multiplied\s+by)\s*" + _NUM, re.I), lambda a, b: a * b, "{a} × {b}"),
    (re.compile(r"\bmultiply\s+" + _NUM + r"\s+(?:by|and|with)\s+" + _NUM, re.I), lambda a, b: a * b, "{a} × {b}"),
    (re.compile(_NUM + r"\s*(?:\+|plus)\s*" + _NUM, re.I), lambda a, b: a + b, "{a} + {b}"),
    (re.compile(r"\badd\s+" + _NUM + r"\s+(?:to|and)\s+" + _NUM, re.I), lambda a, b: a + b, "{a} + {b}"),
    (re.compile(_NUM + r"\s*(?:-|−|minus)\s*" + _NUM, re.I), lambda a, b: a - b, "{a} − {b}"),
    (re.compile(r"\b(?:subtract|take\s+away|take)\s+" + _NUM + r"\s+from\s+" + _NUM, re.I), lambda a, b: b - a,
     "{b} − {a}"),
    (re.compile(_NUM + r"\s*(?:/|÷|divided\s+by)\s*" + _NUM, re.I), lambda a, b: a / b, "{a} ÷ {b}"),
    (re.compile(r"\bdivide\s+" + _NUM + r"\s+by\s+" + _NUM, re.I), lambda a, b: a / b, "{a} ÷ {b}"),
    (re.compile(_NUM + r"\s*(?:\*\*|\^|to\s+the\s+power\s+of|raised\s+to(?:\s+the\s+power\s+of)?)\s*" + _NUM, re.I),
     lambda a, b: a ** b, "{a}^{b}"),
)
#: One operation on the one number the question gives ("double 391").
_UNARY: tuple[tuple[re.Pattern[str], Unary, str], ...] = (
    (re.compile(r"\b(?:double|twice)\s+(?:of\s+)?" + _NUM, re.I), lambda a: 2 * a, "2 × {a}"),
    (re.compile(r"\btriple\s+" + _NUM, re.I), lambda a: 3 * a, "3 × {a}"),
    (re.compile(r"\b(?:half\s+of|halve)\s+" + _NUM, re.I), lambda a: a / 2, "{a} ÷ 2"),
    (re.compile(r"\bsquare\s+root\s+of\s+" + _NUM, re.I), lambda a: math.sqrt(a) if a >= 0 else math.nan, "√{a}"),
    (re.compile(r"\bsquare\s+(?!root)" + _NUM + r"|" + _NUM + r"\s+squared\b", re.I), lambda a: a * a, "{a}²"),
    (re.compile(r"\bcube\s+" + _NUM + r"|" + _NUM + r"\s+cubed\b", re.I), lambda a: a ** 3, "{a}³"),
)


@dataclass(frozen=True)
class Worked:
    """The answer the question's terms give, and how it was worked out, in words the person reads."""
    value: float
    how: str  # "25% of 96 = 24"


@dataclass(frozen=True)
class Bound:
    """Limits the question's terms put on any right answer, and why."""
    low: float
    high: float
    why: str  # "under 100% of 240 is between 0 and 240"


#: A question about data (a table, a date, a column name with an underscore): its numbers are not all operands.
_ABOUT_DATA = re.compile(r"\b(table|tables|column|columns|rows?|file|csv|data(set)?|mean|average|median)\b|"
                         r"\d{4}-\d{1,2}\b|\w_\w", re.I)


def worked_answer(question: str) -> Worked | None:
    """The answer `question` determines on its own terms, or None when it does not (or the rules cannot tell)."""
    readers = (_letter_count, _length) if _ABOUT_DATA.search(question) else (
        _percentage, _letter_count, _length, _arithmetic)
    for read in readers:
        worked = read(question)
        if worked is not None and math.isfinite(worked.value):
            return worked
    return None


def answer_bound(question: str) -> Bound | None:
    """The range any right answer to a percentage question lies in: p% (0 ≤ p ≤ 100) of a number x ≥ 0 is between
    0 and x. None when the question gives not exactly one percentage and one other number, or is about data."""
    if _ABOUT_DATA.search(question):
        return None
    percents = [float(m.group(1)) for m in _PERCENT_NUMBER.finditer(question)]
    if len(percents) != 1:
        return None
    others = [n for n in _numbers(_PERCENT_NUMBER.sub(" ", question))]
    if len(others) != 1 or not 0 <= percents[0] <= 100 or others[0] < 0:
        return None
    p, x = _text(percents[0]), _text(others[0])
    return Bound(0.0, others[0], f"{p}% of {x} is between 0 and {x}")


def matches(answer: Any, expected: float) -> bool:
    """Whether `answer` is `expected`: as a number, exactly, or rounded to the decimals the answer shows."""
    number = as_number(answer)
    if number is None or math.isnan(number):
        return False
    if math.isclose(number, expected, rel_tol=1e-6, abs_tol=1e-9):
        return True
    decimals = _decimals(answer)
    return decimals is not None and decimals >= 1 and round(expected, decimals) == round(number, decimals)


def within(answer: Any, bound: Bound) -> bool:
    number = as_number(answer)
    if number is None or math.isnan(number):
        return True  # not a number: the kind check speaks for it
    return bound.low - 1e-9 <= number <= bound.high + 1e-9


def _percentage(question: str) -> Worked | None:
    match = _PERCENT_OF.search(question)
    if match is None or len(_numbers(question)) != 2:
        return None
    p, x = float(match.group(1)), float(match.group(2))
    value = p * x / 100
    return Worked(value, f"{_text(p)}% of {_text(x)} = {_text(value)}")


def _letter_count(question: str) -> Worked | None:
    """A letter counted in a word: both named by the question, one of each (else nothing is worked out)."""
    if not _COUNT_QUESTION.search(question):
        return None
    quoted = [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(question)]
    unquoted = _QUOTED.sub(lambda m: " " if len(next(g for g in m.groups() if g is not None)) > 1 else m.group(0),
                           question)
    letters = {m.group(1).lower() for form in _LETTER_FORMS for m in form.finditer(unquoted)}
    letters |= {q.lower() for q in quoted if len(q) == 1 and q.isalpha()}
    words = [q for q in quoted if len(q) > 1]
    if not words:
        words = [m.group(1) for form in _WORD_FORMS for m in form.finditer(unquoted)
                 if m.group(1).lower() not in _NOT_A_WORD and len(m.group(1)) > 1]
    words = list(dict.fromkeys(w.lower() for w in words))
    if len(letters) != 1 or len(words) != 1:
        return None
    letter, word = next(iter(letters)), words[0]
    count = word.count(letter)
    return Worked(float(count), f'"{letter}" appears {count} times in "{word}"')


def _length(question: str) -> Worked | None:
    """The characters (or letters) of one quoted text, or of "the word X"."""
    match = _LENGTH.search(question)
    if match is None or any(form.search(question) for form in _LETTER_FORMS[:2]):
        return None
    quoted = [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(question)]
    if not quoted:
        quoted = [m.group(1) for m in _WORD_FORMS[0].finditer(question) if m.group(1).lower() not in _NOT_A_WORD]
    if len(quoted) != 1:
        return None
    text = quoted[0]
    if "letter" in match.group(0).lower():
        count = sum(ch.isalpha() for ch in text)
        return Worked(float(count), f'"{text}" has {count} letters')
    return Worked(float(len(text)), f'"{text}" has {len(text)} characters')


def _arithmetic(question: str) -> Worked | None:
    """One operation on the question's numbers: two for "17 * 23", "subtract 15 from 75"; one for "double 391"."""
    if _PERCENT_NUMBER.search(question):
        return None
    numbers = _numbers(question)
    found: list[Worked] = []
    for pattern, function, how in _BINARY:
        for match in pattern.finditer(question):
            a, b = (float(g) for g in match.groups())
            if len(numbers) == 2:
                try:
                    value = float(function(a, b))
                except (ZeroDivisionError, OverflowError, TypeError):  # TypeError: a complex power
                    return None
                found.append(Worked(value, how.format(a=_text(a), b=_text(b)) + f" = {_text(value)}"))
    for one_pattern, one, one_how in _UNARY:
        for match in one_pattern.finditer(question):
            a = float(next(g for g in match.groups() if g is not None))
            if len(numbers) == 1:
                try:
                    value = float(one(a))
                except OverflowError:
                    return None
                found.append(Worked(value, one_how.format(a=_text(a)) + f" = {_text(value)}"))
    distinct = {round(w.value, 9) for w in found}
    return found[0] if len(distinct) == 1 else None  # two readings that differ: no check rather than a wrong one


def _numbers(text: str) -> list[float]:
    return [float(m.group(1)) for m in _NUMBER.finditer(text)]


def _decimals(answer: Any) -> int | None:
    text = answer.strip() if isinstance(answer, str) else repr(as_number(answer))
    if "e" in text.lower():
        return None
    return len(text.split(".", 1)[1]) if "." in text else 0


def _text(number: float) -> str:
    if number.is_integer():
        return str(int(number))
    return f"{number:.6g}"
