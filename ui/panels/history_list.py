"""The side list's own handlers: the list of an owner's chats, its search and renaming a chat.

Split out of ui/panels/history.py by concept (HistoryController inherits these and gives them its `store` and
`identify`); opening, loading, taking over and deleting a chat stay there.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gradio as gr

from ui.saved.store import ChatStore, ChatStoreError, clean_title


class ChatListHandlers:
    """Handlers of the side list itself, on the saved chats' store."""

    store: ChatStore

    if TYPE_CHECKING:
        def identify(self, state: Any, request: gr.Request | None,
                     profile: gr.OAuthProfile | None = None) -> tuple[str, dict[str, Any]]: ...

    def list_update(self, owner: str, selected: str | None = None) -> Any:
        chats = self.store.list(owner)
        ids = {m.id for m in chats}
        return gr.Radio(choices=[(m.label(), m.id) for m in chats], value=selected if selected in ids else None)

    def search(self, state: Any, query: Any, selected: Any, request: gr.Request) -> tuple:
        """The side list's search: the list itself shows only the owner's chats whose title, messages or
        answers hold every word typed (ui/saved/store.py `search`), as any chat app filters in place; with
        "No chats match" and Clear while it finds none. An empty box shows every chat again."""
        owner, _ = self.identify(state, request)
        text = " ".join(str(query or "").split())[:200]
        chosen = selected if isinstance(selected, str) else None
        if not text:
            return self.list_update(owner, chosen), gr.Row(visible=False), ""
        found = self.store.search(owner, text)
        ids = {m.id for m in found}
        listed = gr.Radio(choices=[(m.label(), m.id) for m in found], value=chosen if chosen in ids else None)
        note = f"No chats match **{_escape_md(text)}**." if not found else f"Showing {len(found)} of your chats."
        return listed, gr.Row(visible=True), note

    def refilter(self, state: Any, query: Any, selected: Any, request: gr.Request) -> tuple:
        """After the list was refreshed (a run ended, a chat opened): the search still typed applies again."""
        if not " ".join(str(query or "").split()):
            return gr.skip(), gr.skip(), gr.skip()
        return self.search(state, query, selected, request)

    def clear_search(self) -> str:
        """Clear search: an empty box; its `change` lists every chat again (one list update, not two racing a
        click on the list)."""
        return ""

    def rename_chat(self, state: Any, chat_id: Any, title: str, request: gr.Request) -> tuple:
        owner, state = self.identify(state, request)
        if not clean_title(title):
            gr.Warning("Type a new title first.")
            return self.list_update(owner, chat_id), gr.skip()
        try:
            self.store.rename(owner, chat_id, title)
        except ChatStoreError as exc:
            gr.Warning(str(exc))
        return self.list_update(owner, chat_id), ""


def _escape_md(text: str) -> str:
    """`text` shown literally inside Markdown (a search typed is the visitor's, not markup)."""
    return "".join("\\" + c if c in "\\`*_{}[]()#+-.!<>|~" else c for c in text)
