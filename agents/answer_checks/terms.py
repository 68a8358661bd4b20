"""Whether the code that made an answer uses what the question names: its numbers, quoted text, the letter it
counts, the columns it names.

Why: a wrong answer from a small model is most often right-looking code about something else (`len("mississippi")`
for "how many s in mississippi", `15 / 100 * 100` for "15% of 240"). A value the question gives that the code
never uses is a plain sign the answer is not to this question. Read from the code's syntax tree, so a name
inside a comment or an unrelated string does not count as used.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.]*\d)")
_QUOTED = re.compile(r"\"([^\"\n]{1,200})\"|“([^”\n]{1,200})”|'([^'\n]{2,200})'")
_LETTER = re.compile(r"\b(?:letter|character|char)\s+['\"]?([A-Za-z])['\"]?(?![\w])", re.I)
#: "how many s in mississippi", "count the e's in excellence": a letter, then the word it is counted in.
_LETTER_IN_WORD = re.compile(r"\b(?:how\s+many|count(?:\s+the)?)\s+['\"]?([A-Za-z])['\"]?(?:'?s)?\s+(?:are\s+|is\s+)?"
                             r"(?:there\s+)?in\s+(?:the\s+word\s+)?['\"]?([A-Za-z]+)['\"]?", re.I)


@dataclass(frozen=True)
class Terms:
    """What the question names that the answering code must use."""
    numbers: tuple[float, ...] = ()
    texts: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()


def question_terms(question: str, columns: tuple[str, ...] = ()) -> Terms:
    """The numbers, quoted (or counted-in) texts, counted letters and named columns of `question`."""
    texts: list[str] = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(question)]
    unquoted = _QUOTED.sub(" ", question)
    for match in _LETTER_IN_WORD.finditer(unquoted):
        texts.extend(match.groups())
    texts.extend(m.group(1) for m in _LETTER.finditer(unquoted))
    numbers = tuple(float(m.group(1)) for m in _NUMBER.finditer(unquoted))
    words = set(re.findall(r"[\w-]+", unquoted))
    named = tuple(c for c in columns if c in words or (" " in c and c in unquoted))
    return Terms(numbers=numbers, texts=tuple(dict.fromkeys(texts)), columns=named)


def unused_terms(terms: Terms, code: str) -> list[str]:
    """The terms the code's literals never mention, as the person wrote them ("240", '"s"', 'column "wind"').

    A number counts as used when the code holds it, or it over 100 (15 for 15%); a text when a string literal of
    the code contains it (any case; a single letter must be a literal of its own); a column when a string
    literal is exactly its name. Code that does not parse is treated as using nothing."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return [*(_number_text(n) for n in terms.numbers), *(f'"{t}"' for t in terms.texts),
                *(f'column "{c}"' for c in terms.columns)]
    numbers: set[float] = set()
    strings: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                continue
            if isinstance(node.value, (int, float)):
                numbers.add(float(node.value))
            elif isinstance(node.value, str):
                strings.append(node.value)
    missing = [_number_text(n) for n in terms.numbers if not _number_used(n, numbers)]
    lowered = [s.lower() for s in strings]
    missing += [f'"{t}"' for t in terms.texts if not _text_used(t.lower(), lowered)]
    missing += [f'column "{c}"' for c in terms.columns if c not in strings]
    return missing


def _text_used(text: str, literals: list[str]) -> bool:
    """A letter must be a literal of its own (`"s"`, not the s of `"mississippi"`); longer text may be inside one."""
    if len(text) == 1:
        return text in literals
    return any(text in literal for literal in literals)


def _number_used(number: float, literals: set[float]) -> bool:
    return any(abs(number - value) < 1e-9 or abs(number / 100 - value) < 1e-9 for value in literals)


def _number_text(number: float) -> str:
    return str(int(number)) if number.is_integer() else str(number)
