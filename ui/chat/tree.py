"""The chat as a small tree of nodes, flattened into Gradio's "messages" format on demand.

A node is one chat message: a collapsible "thought" when it has a title (metadata title/id/status/duration/
log), plain text or an inline file otherwise; its children are shown nested (metadata parent_id). The tree
is separate from the event mapping (ui/chat/render.py) because the person's side (their messages, uploads, notes)
and the rebuilt chats (ui/saved/restore.py) add nodes too, and because flattening is the one place that knows
Gradio's message shape. No Gradio import: plain dicts.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ui.chat.formatting import fence, file_digest
from ui.chat.safe_markdown import neutralize

if TYPE_CHECKING:  # published_files imports Gradio; the tree does not
    from ui.chat.published_files import Published


@dataclass
class Node:
    id: str
    role: str = "assistant"
    title: str | None = None
    status: str | None = None
    duration: float | None = None
    log: str | None = None
    parts: dict[str, str] = field(default_factory=dict)  # ordered named sections of the content
    file: dict[str, Any] | None = None  # a file message (image) instead of text
    children: list[Node] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    #: Waiting for the person (a decision, or the step it paused): still "pending" for the run's logic, but shown
    #: open and without the spinner, which says the agent is at work (ui/chat/render_decisions.py).
    waiting: bool = False

    def content(self) -> str:
        return neutralize("\n\n".join(p for p in self.parts.values() if p))


class ChatTree:
    """Nodes by id, in order; the person-side messages; the flat message list."""

    def __init__(self, publish: Callable[[str], Published] | None = None) -> None:
        self.publish = publish  # a file -> its published copy (ui/chat/published_files.py); None: shown as is
        self.roots: list[Node] = []
        self.by_id: dict[str, Node] = {}
        self._counter = 0

    # ----- building blocks -------------------------------------------------------------------------
    def _new_id(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}-{self._counter}"

    def _add(self, node: Node, parent: Node | None = None) -> Node:
        (parent.children if parent is not None else self.roots).append(node)
        self.by_id[node.id] = node
        return node

    def _put(self, node: Node, parent: Node | None = None) -> Node:
        """`_add`, except that a node of the same id (a step a resumed run acts again: it ended at a decision,
        agents/decisions/pending.py) is replaced where it stood, its old content forgotten."""
        old = self.by_id.get(node.id)
        siblings = parent.children if parent is not None else self.roots
        if old is None or not any(n is old for n in siblings):
            return self._add(node, parent)
        siblings[next(i for i, n in enumerate(siblings) if n is old)] = node
        stale = list(old.children)
        while stale:
            child = stale.pop()
            stale.extend(child.children)
            if self.by_id.get(child.id) is child:
                del self.by_id[child.id]
        self.by_id[node.id] = node
        return node

    def shown_file(self, path: str) -> tuple[str, str | None] | None:
        """(the path a file message shows, the digest of its content): its published copy, a snapshot
        (ui/chat/published_files.py), or the file itself without a publisher; None if it cannot be shown."""
        if self.publish is None:
            return path, file_digest(path)
        try:
            published = self.publish(path)
        except ValueError as exc:  # not publishable: say so instead of showing a broken file
            self.add_note(f"⚠️ {exc}: not shown.")
            return None
        return published.path, published.digest

    def shown_file_if_there(self, path: str) -> tuple[str, str | None] | None:
        """`shown_file` for a name that may not be a file at all (an answer that is a string ending in .png):
        None, and no note, when it cannot be shown."""
        if self.publish is None:
            digest = file_digest(path)
            return (path, digest) if digest is not None else None
        try:
            published = self.publish(path)
        except (OSError, ValueError):
            return None
        return published.path, published.digest

    def add_user(self, text: str, files: list[str] | None = None) -> None:
        for path in files or []:
            shown = self.shown_file(path)
            if shown is not None:
                self._add(Node(self._new_id("user-file"), role="user",
                               file={"path": shown[0], "alt_text": os.path.basename(path)}))
        if text.strip():
            self._add(Node(self._new_id("user"), role="user", parts={"text": text}))

    def add_note(self, text: str, title: str | None = None, status: str | None = None) -> Node:
        return self._add(Node(self._new_id("note"), title=title, status=status, parts={"text": text}))

    def add_uploads(self, results: list[Any]) -> None:
        """One collapsed thought with the previews of good files, one visible warning per bad file."""
        good = [r for r in results if r.ok]
        if good:
            text = "\n\n".join(f"**{r.safe_name}**\n{fence(r.preview)}" for r in good)
            names = ", ".join(r.safe_name for r in good)
            self.add_note(text, title=f"📎 Added to the workspace: {names}", status="done")
        for r in results:
            if not r.ok:
                self.add_note(f"⚠️ {r.error} The run continues without it.")

    # ----- output ----------------------------------------------------------------------------------
    def messages(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []

        def emit(node: Node, parent: Node | None) -> None:
            message: dict[str, Any] = {"role": node.role, "content": node.file if node.file else node.content()}
            metadata: dict[str, Any] = {}
            if node.title:
                metadata["title"] = neutralize(node.title)  # tool names and errors come from the model
                metadata["id"] = node.id
                if node.status and not (node.waiting and node.status == "pending"):
                    metadata["status"] = node.status
                if node.duration is not None:
                    metadata["duration"] = node.duration
                if node.log:
                    metadata["log"] = neutralize(node.log)
            if parent is not None:
                metadata["parent_id"] = parent.id
            if metadata:
                message["metadata"] = metadata
            if not node.file and not message["content"] and not node.title:
                return
            if not node.file and not message["content"]:
                message["content"] = " "  # an empty thought still shows its title
            out.append(message)
            for child in node.children:
                emit(child, node if node.title else parent)

        for root in self.roots:
            emit(root, None)
        return out
