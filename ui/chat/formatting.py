"""Markdown for the chat: fenced blocks, clipped text, token counts, answer values, image messages.

Kept apart from the transcript so everything that writes chat text (the event mapping in ui/chat/render.py,
the approval panel, the chat restore) shares one way of fencing and clipping. No Gradio here.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import stat
from typing import Any

from agents.text_tables import table_of_frame, text_with_tables, to_markdown

IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".bmp"}
MAX_BLOCK_CHARS = 6000


def fence(text: str, lang: str = "") -> str:
    """A fenced code block that survives backticks inside `text`."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{clip(text)}\n{ticks}"


def clip(text: str, limit: int = MAX_BLOCK_CHARS) -> str:
    text = str(text).rstrip()
    if len(text) <= limit:
        return text
    return text[: limit // 2] + f"\n… ({len(text) - limit} characters cut) …\n" + text[-limit // 2:]


def first_words(text: str, limit: int = 90) -> str:
    """`text` cut for a one-line label: its first sentence when that fits, else whole words up to `limit`
    and an ellipsis (a cut mid-word read as a typo: "returns ... plain te")."""
    text = " ".join(str(text).split())
    sentence = re.match(r"(.+?[.!?])(\s|$)", text)
    if sentence and len(sentence.group(1)) <= limit:
        return sentence.group(1)
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(",;:(-")
    return cut + "…"


def format_tokens(usage: Any) -> str:
    if usage is None:
        return ""
    total = getattr(usage, "total_tokens", 0) or 0
    if not total:
        return ""
    return f"{total:,} tokens ({usage.input_tokens:,} in · {usage.output_tokens:,} out)"


def thought_without_code(text: str) -> str:
    """The model's reply up to its first code block, without a dangling 'Code:' label."""
    cut = len(text)
    for marker in ("```", "<code>"):
        index = text.find(marker)
        if index != -1:
            cut = min(cut, index)
    thought = text[:cut].rstrip()
    return re.sub(r"(?:\n|^)\s*Code:\s*$", "", thought).strip()


def format_value(value: Any) -> str:
    """An answer as chat Markdown: text as it is (a data frame printed in it as a table), frames as tables."""
    if value is None:
        return "(no answer)"
    if isinstance(value, str):
        return text_with_tables(value)
    table = table_of_frame(value)
    if table is not None:
        return to_markdown(table)
    if hasattr(value, "to_string"):
        return fence(value.to_string())
    if isinstance(value, (dict, list)):
        try:
            return fence(json.dumps(value, indent=2, default=str), "json")
        except (TypeError, ValueError):
            pass
    return str(value)


def file_digest(path: str, limit: int = 20 * 1024 * 1024) -> str | None:
    """SHA-1 of a file's bytes (None when unreadable, not a regular file, a link, or over `limit`): spots the
    same figure saved twice. The file is the worker's: opened as published files are (never through a link at
    its end, without waiting on a FIFO)."""
    from ui.chat.published_files import READ_FLAGS

    try:
        fd = os.open(path, READ_FLAGS)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(limit + 1)
        return hashlib.sha1(data).hexdigest() if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def image_message(path: str, alt: str) -> dict[str, Any]:
    return {"path": path, "alt_text": alt}


_SERVER_PATH = re.compile(r"(?<![\w.:/])/(?:[^\s'\"`:/]+/)+([^\s'\"`:/]*)")
_log = logging.getLogger("agentdeck.errors")


def for_visitor(exc: BaseException, context: str) -> str:
    """An error as a visitor may see it: its type and message without server paths (a path keeps only its
    file name). The operator's log gets the whole exception with its traceback."""
    _log.error("%s: %s", context, exc, exc_info=exc)
    return f"{type(exc).__name__}: {scrub_server_paths(str(exc))}"


def scrub_server_paths(text: str) -> str:
    return _SERVER_PATH.sub(lambda m: "…/" + m.group(1) if m.group(1) else "…", text)
