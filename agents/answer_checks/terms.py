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
#: Single quotes count only around a word, not an apostrophe's ("how many o's are in 'bookworm'" quotes bookworm).
_QUOTED = re.compile(r"\"([^\"\n]{1,200})\"|“([^”\n]{1,200})”|(?<![A-Za-z])'([^'\n]{2,200})'(?![A-Za-z])")
#: "the letter l", and the word it is counted in when one follows ("count the letter l in parallel").
_LETTER = re.compile(r"\b(?:letter|character|char)\s+['\"]?([A-Za-z])['\"]?(?![\w])"
                     r"(?:\s+(?:appears?|occurs?|is)?\s*in\s+(?:the\s+word\s+)?['\"]?([A-Za-z]{2,})['\"]?)?", re.I)
#: "how many a's does "abracadabra" contain": a letter written with 's (the word is quoted, so a term already).
_LETTER_PLURAL = re.compile(r"\bhow\s+many\s+['\"]?([A-Za-z])['\"]?'s\b", re.I)
#: "how many s in mississippi", "count the e's in excellence": a letter, then the word it is counted in.
_LETTER_IN_WORD = re.compile(r"\b(?:how\s+many|count(?:\s+the)?)\s+['\"]?([A-Za-z])['\"]?(?:'?s)?\s+(?:are\s+|is\s+)?"
                             r"(?:there\s+)?in\s+(?:the\s+word\s+)?['\"]?([A-Za-z]+)['\"]?", re.I)


#: Words that ask for an operation, the operators that do it, and functions that may do it instead ("double 391"
#: answered with `391` is not an answer to it).
_OPERATIONS: dict[str, tuple[re.Pattern[str], tuple[type[ast.operator], ...], tuple[str, ...]]] = {
    "a multiplication": (re.compile(r"\b(times|multipl\w*|double|twice|triple|product)\b", re.I), (ast.Mult,),
                         ("prod", "mul", "multiply")),
    "an addition": (re.compile(r"\b(plus|add|added|increased?\s+by)\b", re.I), (ast.Add,), ("add", "sum", "fsum")),
    "a subtraction": (re.compile(r"\b(minus|subtract\w*|decreased?\s+by)\b", re.I), (ast.Sub,), ("sub", "subtract")),
    "a division": (re.compile(r"\b(divided|divide|half|halve)\b", re.I), (ast.Div, ast.FloorDiv),
                   ("truediv", "floordiv", "divide")),
    # "15% of 240" takes a part of 240: 240 * 15 / 100, never 240 / 15 (issue 31's "30% of 150" answered 5.0).
    "a multiplication (a percentage of a number)": (re.compile(r"%\s*of\b|\bper\s?cent\s+of\b", re.I), (ast.Mult,),
                                                    ("mul", "multiply")),
    "a power": (re.compile(r"\b(power|squared|cubed)\b", re.I), (ast.Pow,), ("pow",)),
}


_HOW_MANY_TIMES = re.compile(r"\bhow\s+(many|often)\s+times\b|\bnumber\s+of\s+times\b", re.I)


@dataclass(frozen=True)
class Terms:
    """What the question names that the answering code must use."""
    numbers: tuple[float, ...] = ()
    texts: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    operations: tuple[str, ...] = ()  # keys of _OPERATIONS: what the question asks to compute


def question_terms(question: str, columns: tuple[str, ...] = ()) -> Terms:
    """The numbers, quoted (or counted-in) texts, counted letters and named columns of `question`."""
    texts: list[str] = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(question)]
    unquoted = _QUOTED.sub(" ", question)
    for match in _LETTER_IN_WORD.finditer(unquoted):
        texts.extend(match.groups())
    texts.extend(g for m in _LETTER.finditer(unquoted) for g in m.groups() if g)
    texts.extend(m.group(1) for m in _LETTER_PLURAL.finditer(unquoted))
    numbers = tuple(float(m.group(1)) for m in _NUMBER.finditer(unquoted))
    words = set(re.findall(r"[\w-]+", unquoted))
    named = tuple(c for c in columns if c in words or (" " in c and c in unquoted))
    asked = _HOW_MANY_TIMES.sub(" ", unquoted)  # "how many times does s appear" counts, it does not multiply
    operations = tuple(name for name, (words_re, _, _) in _OPERATIONS.items() if words_re.search(asked))
    return Terms(numbers=numbers, texts=tuple(dict.fromkeys(texts)), columns=named, operations=operations)


def unused_terms(terms: Terms, code: str) -> list[str]:
    """The terms the code never uses, as the person reads them ("240", '"s"', 'column "wind"', "a multiplication").

    A number counts as used when the code holds it, or it over 100 (15 for 15%); a text when a string literal of
    the code contains it (any case; a single letter must be a literal of its own); a column when a string
    literal is exactly its name; an operation when the code has its operator or calls a function that does it.
    Code that does not parse is treated as using nothing."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return [*(_number_text(n) for n in terms.numbers), *(f'"{t}"' for t in terms.texts),
                *(f'column "{c}"' for c in terms.columns), *terms.operations]
    numbers: set[float] = set()
    strings: list[str] = []
    operators: set[type[ast.operator]] = set()
    called: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.BinOp, ast.AugAssign)):
            operators.add(type(node.op))
        elif isinstance(node, ast.Call):
            function = node.func
            called.add(function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", ""))
        elif isinstance(node, ast.Constant):
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
    for name in terms.operations:
        _, ops, functions = _OPERATIONS[name]
        if not operators.intersection(ops) and not called.intersection(functions):
            missing.append(name)
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
