"""A saved chat's title and the text its search looks in, made from the conversation (issue 31).

Why: titles were the first message cut at 80 characters, so seven chats started from one example read the same,
and a message of files alone made an "Untitled chat". A title is now the task's first clause without the polite
opening, the files it names or came with, and, when another chat of the same owner already has that title, the
answer it got (else a number), so no two entries read alike.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

#: A title's length at most (cut at a word).
TITLE_CHARS = 80
#: What a chat's search looks in, at most (the messages sent and the answers, in order).
SEARCH_CHARS = 4000
_OPENINGS = re.compile(r"^(?:(?:please|hi|hello|hey)[,!.]?\s+|(?:can|could|would) you(?: please)?\s+|"
                       r"i (?:want|need|would like) you to\s+|help me\s+)+", re.IGNORECASE)
#: The number `distinct` gives a title that another chat has (replaced by the answer once there is one).
NUMBERED = re.compile(r" \(\d+\)$")
_CLAUSE_END = re.compile(r"(?<=[.?!;])\s|\n")


def cut_at_word(text: str, limit: int) -> str:
    """`text` on one line, at most `limit` characters, cut at a word with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip(" ,;:-") + "…"


def title_from(text: str, files: Iterable[str] = ()) -> str:
    """The title of a chat whose first message is `text` with the uploads `files` (names)."""
    names = [str(name) for name in files if str(name).strip()]
    task = _OPENINGS.sub("", " ".join(str(text or "").split()))
    task = _CLAUSE_END.split(task, maxsplit=1)[0].strip() if task else ""
    if not task:
        return cut_at_word("Files: " + ", ".join(names), TITLE_CHARS) if names else ""
    unnamed = [name for name in names if name.lower() not in task.lower()]
    title = cut_at_word(task, TITLE_CHARS - (len(unnamed[0]) + 3 if unnamed else 0))
    return f"{title} · {unnamed[0]}" if unnamed else title


def distinct(title: str, taken: Iterable[str], answer: str = "") -> str:
    """`title`, made different from the owner's other titles (`taken`): with the answer the chat got, else a
    number."""
    others = {t.casefold() for t in taken}
    if title.casefold() not in others:
        return title
    half = (TITLE_CHARS - 3) // 2  # the two halves and " → " fit in a title
    if answer.strip():
        with_answer = f"{cut_at_word(title, half)} → {cut_at_word(answer, half)}"
        if with_answer.casefold() not in others:
            return with_answer
    title = cut_at_word(title, TITLE_CHARS - 8)  # room for the number
    number = 2
    while f"{title} ({number})".casefold() in others:
        number += 1
    return f"{title} ({number})"


def search_text(turns: list[dict[str, Any]], answers: Iterable[str]) -> str:
    """What a chat's search looks in: the messages sent and the answers, bounded."""
    parts = [str(t.get("text") or "") for t in turns] + [str(a) for a in answers]
    return " ".join(" ".join(parts).split())[:SEARCH_CHARS]


def matches(query: str, *texts: str) -> bool:
    """Every word of `query` is in one of `texts` (case-insensitive)."""
    haystack = " ".join(texts).casefold()
    return all(word in haystack for word in query.casefold().split())
