"""A saved chat's identity and list entry: browser tokens and chat ids (checked against their patterns before
they touch a path), `ChatMeta` (meta.json: title, times, steps, search text, who wrote the title) and its parsing.

Kept apart from the store (ui/saved/store.py), which reads and writes these through its blob store.
"""
from __future__ import annotations

import json
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any

from ui.saved import titles
from ui.saved.model_titles import BY_TASK, TITLE_BY

MAX_TITLE_CHARS = 80
TOKEN_BYTES = 32
_CHAT_ID = re.compile(r"^[0-9a-f]{32}$")
_TOKEN = re.compile(r"^[0-9a-f]{64}$")


def new_token() -> str:
    """A browser's identity: 32 random bytes, hex."""
    return secrets.token_hex(TOKEN_BYTES)


def valid_token(token: Any) -> bool:
    return isinstance(token, str) and bool(_TOKEN.match(token))


def valid_chat_id(chat_id: Any) -> bool:
    return isinstance(chat_id, str) and bool(_CHAT_ID.match(chat_id))


@dataclass(frozen=True)
class ChatMeta:
    id: str
    title: str
    created: float
    updated: float
    steps: int = 0
    #: meta.json is there but unreadable (cut short by a crash or a full disk): listed anyway, with a note, since
    #: the chat's memory is intact and opens; the next message writes a whole meta.json again.
    damaged: bool = False
    text: str = ""  # what the list's search looks in besides the title (ui/saved/titles.py)
    title_by: str = BY_TASK  # who wrote the title: the task and files, the chat's model, the person (model_titles.py)

    def label(self) -> str:
        if self.damaged:
            return f"⚠️ {self.title} · its list entry was damaged (the chat opens from its saved memory)"
        when = time.strftime("%d %b %H:%M", time.localtime(self.updated))
        return f"{self.title} · {when}"


def parse_meta(raw: bytes, chat_id: str) -> ChatMeta | None:
    try:
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict):
            return None
        return ChatMeta(id=chat_id, title=clean_title(str(data.get("title") or "")) or "Untitled chat",
                        created=float(data.get("created") or 0.0), updated=float(data.get("updated") or 0.0),
                        steps=int(data.get("steps") or 0), text=str(data.get("text") or "")[:titles.SEARCH_CHARS],
                        title_by=by if (by := data.get("title_by")) in TITLE_BY else BY_TASK)
    except (ValueError, TypeError, AttributeError):
        return None


def clean_title(title: str) -> str:
    text = " ".join(str(title or "").split())
    return text if len(text) <= MAX_TITLE_CHARS else text[: MAX_TITLE_CHARS - 1] + "…"
