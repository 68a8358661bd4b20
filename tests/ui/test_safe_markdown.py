"""The chat's sanitiser: raw HTML shown as text, images as links, code untouched."""
from __future__ import annotations

import pytest

from ui.safe_markdown import neutralize


@pytest.mark.parametrize("text,kept", [
    ("<img src=x onerror=alert(1)>", "&lt;img"),
    ("![a](http://h/x.png)", "🖼 [a](http://h/x.png)"),
    ("```html\n<b>code</b>\n```", "```html\n<b>code</b>\n```"),
    ("use `<div>` here", "use `\uff1cdiv>` here"),
    # Forms a regular expression took for code while the renderer showed HTML (the fresh-eyes attack):
    ("`x\n\n<div style=position:fixed>y</div>\n\n`", "&lt;div style=position:fixed>"),
    ("```y`\n<div style=position:fixed>\n```", "&lt;div style=position:fixed>"),
    ("```\nx\n   ```\n<a href=h style=position:fixed>", "&lt;a href=h"),
    ('<span class="ad-error">Error</span> <b>x</b>', '<span class="ad-error">Error</span> &lt;b>x&lt;/b>'),
    ("<form action=http://h><input type=password></form>", "&lt;form action=http://h>&lt;input"),
    ("<div style='position:fixed'>x</div>", "&lt;div style='position:fixed'>"),
])
def test_neutralize(text: str, kept: str) -> None:
    assert kept in neutralize(text)
