"""Deleting a saved chat asks first: the sidebar's Delete opens a question naming the chat; only its
"Delete chat" button deletes (the handler is ui/panels/history.py's `delete_chat`, unchanged).

Why: a chat's messages and workspace files go with it and there is no undo, and Delete sits next to
Rename. Also here: the export box stays out of sight until there is an export to download.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from ui.chat.safe_markdown import neutralize
from ui.panels.history import HistoryController

CSS = """
#export-file:has(> .empty) { display: none; }
#chat-delete-confirm { border: 1px solid var(--border-color-accent); }
#chat-list { max-height: 45vh; overflow-y: auto; }
"""
#: The question is brought into view once shown: under a long list it opened below the sidebar's fold (issue 31).
QUESTION_IN_VIEW_JS = """() => new Promise(done => {
  const until = Date.now() + 2000;
  const look = () => {
    const box = document.querySelector('#chat-delete-confirm');
    if (box && box.offsetParent) { box.scrollIntoView({block: 'nearest'}); return done([]); }
    if (Date.now() > until) return done([]);
    requestAnimationFrame(look);
  };
  look();
})"""


@dataclass
class ChatDeleteConfirm:
    box: Any
    question: Any
    yes: Any
    no: Any


def build() -> ChatDeleteConfirm:
    """The question under the Delete button, hidden until it is pressed (call inside the sidebar)."""
    with gr.Column(visible=False, elem_id="chat-delete-confirm", variant="panel") as box:
        question = gr.Markdown("", elem_id="chat-delete-question", padding=True)
        with gr.Row():
            yes = gr.Button("Delete chat", variant="stop", size="sm", elem_id="chat-delete-yes")
            no = gr.Button("Keep it", size="sm", elem_id="chat-delete-no")
    return ChatDeleteConfirm(box, question, yes, no)


def ask(history: HistoryController, state: Any, chat_id: Any, request: gr.Request) -> tuple:
    """(confirmation box, its question) for the selected chat, or a warning when none is selected."""
    owner, _ = history.identify(state, request)
    title = next((m.title for m in history.store.list(owner) if m.id == chat_id), None)
    if title is None:
        gr.Warning("Select a chat in the list first, then press Delete.")
        return gr.update(visible=False), ""
    return gr.update(visible=True), (f"Delete the chat **{neutralize(title)}** with its messages and files? "
                                     "This cannot be undone.")


def hide() -> Any:
    return gr.update(visible=False)


def wire(history: HistoryController, panel: Any, confirm: ChatDeleteConfirm, view: list[Any],
         light: dict[str, Any]) -> None:
    """Delete asks; "Delete chat" deletes the chat selected in the list (selecting another one closes the
    question, so what is deleted is what was named)."""
    def ask_for(state: Any, chat_id: Any, request: gr.Request) -> tuple:
        return ask(history, state, chat_id, request)

    inputs = [panel.browser_state, panel.chat_list]
    asked = panel.delete_btn.click(ask_for, inputs=inputs, outputs=[confirm.box, confirm.question],
                                   api_visibility="private", **light)
    asked.then(None, js=QUESTION_IN_VIEW_JS, queue=False, api_visibility="private")
    confirm.yes.click(hide, outputs=[confirm.box], api_visibility="private", **light)
    confirm.yes.click(history.delete_chat, inputs=inputs, outputs=view, api_name="delete_chat", **light)
    confirm.no.click(hide, outputs=[confirm.box], api_visibility="private", **light)
    panel.chat_list.select(hide, outputs=[confirm.box], api_visibility="private", **light)
