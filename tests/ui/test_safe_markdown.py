"""The chat's sanitiser: raw HTML shown as text, images as links, code untouched."""
from __future__ import annotations

import pytest

from ui.chat.safe_markdown import neutralize


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
    ('<span class="ad-step-output"></span> <b onclick=x>', '<span class="ad-step-output"></span> &lt;b onclick=x>'),
    ("<form action=http://h><input type=password></form>", "&lt;form action=http://h>&lt;input"),
    ("<div style='position:fixed'>x</div>", "&lt;div style='position:fixed'>"),
])
def test_neutralize(text: str, kept: str) -> None:
    assert kept in neutralize(text)


def test_titles_and_logs_of_chat_messages_are_neutralised_too() -> None:
    """A tool name or error type shown in a step's title comes from the model (or a reopened chat's file)."""
    from ui.chat.tree import ChatTree, Node

    tree = ChatTree()
    node = tree._add(Node("n1", title='🛠️ <img src="http://evil.test/x">', log="<form action=//evil.test>",
                          parts={"text": "ok"}))
    assert node.title.startswith("🛠️ <img")
    shown = tree.messages()[0]["metadata"]
    assert "<img" not in shown["title"] and "&lt;img" in shown["title"]
    assert "<form" not in shown["log"]


def test_the_approval_panel_shows_the_agents_question_as_text() -> None:
    import ui.panels.approval_panel as panel
    from agents import events as ev

    request = ev.DecisionRequested(run_id="r", step=1, request_id="q1", request_kind="question",
                                   payload={"question": '<img src="http://evil.test/?d=1"> Which file?'})
    shown = panel.view(request)["question_text"]
    value = shown["value"] if isinstance(shown, dict) else shown.value
    assert "<img" not in value and "Which file?" in value
