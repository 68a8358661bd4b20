"""The saved-chats sidebar as components: built inside the Blocks, then wired to the HistoryController
(ui/panels/history.py) and the ChatExports (ui/panels/exports.py), which do the work."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from ui.components import Page
from ui.panels import chat_delete, chat_taken
from ui.panels.answered_elsewhere import AnsweredElsewhere
from ui.panels.approval_panel import keep_choice_after
from ui.panels.exports import ChatExports
from ui.panels.files import download_value_js
from ui.panels.history import HistoryController
from ui.saved.data_folder import storage_is_ephemeral
from ui.services import Services
from ui.web import chat_view, gradio_dom, responsive


@dataclass
class HistoryPanel:
    """The components of the side list (built inside the Blocks by `build_history_panel`)."""
    browser_state: Any
    chat_list: Any
    title_box: Any
    rename_btn: Any
    delete_btn: Any
    export_md_btn: Any
    export_nb_btn: Any
    export_file: Any
    list_note: Any
    takeover_btn: Any = None
    delete_confirm: Any = None  # ui/panels/chat_delete.py
    export_zip_btn: Any = None  # the Markdown export with the files it links (ui/panels/bundles.py)
    search_box: Any = None  # the list's search (titles, messages, answers): it filters `chat_list` in place
    search_note: Any = None  # "No chats match …" while the search finds none
    search_clear: Any = None  # empties the search and shows every chat again
    search_state: Any = None  # the row of the two above, shown while the box holds a search
    #: The events after which this tab shows another session (page load, a chat opened, taken over) and after
    #: which a run handed to it streams on: the approval panel shows that session's pending decision after each
    #: (ui/panels/approvals.py `show_after`), or a tab opened again shows "waiting" with no buttons.
    shown: list[Any] = field(default_factory=list)



def build_history_panel(services: Services) -> HistoryPanel:
    """The side list of saved chats and the export buttons (call inside the Blocks)."""
    browser_state = gr.BrowserState(None, storage_key="agentdeck-browser",
                                    secret=services.store.browser_state_secret())
    with gr.Sidebar(label="Chats", open=True, elem_id="history-sidebar", width=300):
        gr.Markdown("### 💬 Your chats")
        list_note = gr.Markdown("Chats are saved on this server for this browser. Click one to reopen it.",
                                elem_id="chat-list-note")
        if storage_is_ephemeral(services.config.data_dir):
            gr.Markdown("⚠️ Saved chats may be lost when this Space restarts (it has no persistent storage).",
                        elem_id="storage-note")  # the operator's remedy goes to the log (ui/server.py create_app)
        # Placeholders short enough for the sidebar's 300 px (a longer one was cut at the box's edge); the search
        # looks in titles, messages and answers (ui/panels/history_list.py).
        search_box = gr.Textbox(placeholder="🔍 Search titles and chat text", show_label=False,
                                max_lines=1, elem_id="chat-search", container=False)
        with gr.Row(visible=False, elem_id="chat-search-state") as search_state:
            search_note = gr.Markdown("", elem_id="chat-search-note")
            search_clear = gr.Button("✕ Clear search", size="sm", elem_id="chat-search-clear", scale=0,
                                     min_width=60)
        chat_list = gr.Radio(choices=[], value=None, show_label=False, elem_id="chat-list", container=False)
        with gr.Row():
            title_box = gr.Textbox(placeholder="New chat title", show_label=False, max_lines=1,
                                   elem_id="chat-title", container=False, scale=3)
            rename_btn = gr.Button("✏️ Rename", size="sm", elem_id="rename-chat-btn", scale=1, min_width=60)
        delete_btn = gr.Button("🗑 Delete selected chat", size="sm", variant="stop", elem_id="delete-chat-btn")
        delete_confirm = chat_delete.build()  # Delete asks first
        gr.Markdown("### ⬇️ Export this chat")
        with gr.Row():
            export_md_btn = gr.Button("Markdown", size="sm", elem_id="export-md-btn")
            export_nb_btn = gr.Button("Notebook", size="sm", elem_id="export-nb-btn")
        export_zip_btn = gr.Button("Markdown + its files (zip)", size="sm", elem_id="export-zip-btn")
        export_file = gr.File(label="Export", elem_id="export-file", interactive=False, height=80)
    return HistoryPanel(browser_state, chat_list, title_box, rename_btn, delete_btn, export_md_btn, export_nb_btn,
                        export_file, list_note, delete_confirm=delete_confirm, export_zip_btn=export_zip_btn,
                        search_box=search_box, search_note=search_note,
                        search_clear=search_clear, search_state=search_state)


def wire_history_panel(demo: gr.Blocks, services: Services, panel: HistoryPanel, page: Page,
                       after_runs: list[Any], new_chat_event: Any, approval_mode: Any,
                       decision_panel: list[Any], elsewhere: AnsweredElsewhere | None = None) -> HistoryController:
    """The side list's events; `after_runs` are the run events (the list refreshes when they end);
    `approval_mode` is the mode selector, which every chat shown sets again (`HistoryController._mode`); a
    chat shown (opened, deleted, new) also empties the export box. `decision_panel`: the approval panel's
    components but the message box, which a watched run's follow updates (ui/panels/watch.py `PANEL_KEYS`);
    `elsewhere`: the panel's record of decisions made in other tabs, which the watch tells of."""
    history = HistoryController(services, elsewhere)
    settings = page.form.by_name()  # the handlers take the form by name (ui/settings_form.py)
    view = [panel.browser_state, *page.column.outputs(), panel.chat_list, *page.form.values(), approval_mode,
            panel.export_file]
    heavy: dict[str, Any] = dict(concurrency_limit=services.config.max_runs, concurrency_id="runs",
                                 show_progress="hidden")
    light: dict[str, Any] = dict(concurrency_limit=None, show_progress="hidden")
    reattach: dict[str, Any] = dict(outputs=page.column.outputs(), postprocess=False, api_visibility="private",
                                    **heavy)
    streamer = services.streamer
    refresh: dict[str, Any] = dict(inputs=[panel.browser_state],
                                   outputs=[panel.browser_state, panel.chat_list, panel.takeover_btn],
                                   api_visibility="private", **light)
    # A run taken over from a closed page streams on; then the list shows the chat this tab ends up with.
    loaded = demo.load(history.on_load, inputs=[panel.browser_state], inputs_kwargs=settings,
                       outputs=view, api_name="browser_session", **heavy)
    reattached = loaded.then(streamer.reattach, **reattach)
    reattached.then(history.refresh, **refresh)
    # The decision the page shows when the watch starts (the panel's request id, VIEW_KEYS' first) is its input.
    watch: dict[str, Any] = dict(inputs=[decision_panel[0]], outputs=[*page.column.outputs(), *decision_panel],
                                 api_visibility="private",
                                 show_progress="hidden",
                                 concurrency_limit=services.config.max_runs, concurrency_id="watch")
    watched = loaded.then(history.watch.follow, **watch)  # a chat running in another open tab (ui/panels/watch.py)
    keep_choice_after(loaded, approval_mode)  # a mode chosen while the page loaded stays chosen
    chat_view.shown_after(loaded)  # the chat says "Loading…" until then, not the welcome
    opened = panel.chat_list.select(history.open_chat, inputs=[panel.browser_state, panel.chat_list],
                                    inputs_kwargs=settings,
                                    outputs=view, api_name="open_chat", **heavy)
    responsive.close_sidebar_on_choice(panel.chat_list.select)  # a phone shows the chat chosen, not the list
    demo.load(None, js=gradio_dom.CHOSEN_CHAT_CLICKABLE_JS)  # a chat checked in the list opens on a click too
    demo.load(None, js=gradio_dom.CHAT_LIST_KEYS_JS)  # arrows move between chats, Enter opens one
    opened_run = opened.then(streamer.reattach, **reattach)
    opened.then(history.takeover_button, outputs=[panel.takeover_btn], api_visibility="private", **light)
    opened_watch = opened.then(history.watch.follow, **watch)
    searched = [panel.chat_list, panel.search_state, panel.search_note]
    panel.search_box.submit(history.search, inputs=[panel.browser_state, panel.search_box, panel.chat_list],
                            outputs=searched, api_visibility="private", **light)
    # `change`, not `input`: Gradio's box reports no `input` for Backspace or a paste, so a box emptied with the
    # keyboard kept the list filtered and a pasted word filtered nothing.
    panel.search_box.change(history.search, inputs=[panel.browser_state, panel.search_box, panel.chat_list],
                           outputs=searched, api_name="search_chats", trigger_mode="always_last", **light)
    panel.search_clear.click(history.clear_search, outputs=[panel.search_box], api_visibility="private", **light)
    chat_view.opened_after(opened)  # "Loading…", not the welcome, until the chat chosen is shown
    panel.rename_btn.click(history.rename_chat, inputs=[panel.browser_state, panel.chat_list, panel.title_box],
                           outputs=[panel.chat_list, panel.title_box], api_name="rename_chat", **light)
    panel.title_box.submit(history.rename_chat, inputs=[panel.browser_state, panel.chat_list, panel.title_box],
                           outputs=[panel.chat_list, panel.title_box], api_visibility="private", **light)
    chat_delete.wire(history, panel, panel.delete_confirm, view, light)
    exports = ChatExports(services)
    # Each export downloads on one click, as "Download all files" does (ui/panels/files.py).
    made = [panel.export_md_btn.click(exports.export_markdown, outputs=[panel.export_file],
                                      api_name="export_markdown", **light),
            panel.export_nb_btn.click(exports.export_notebook, outputs=[panel.export_file],
                                      api_name="export_notebook", **light)]
    if panel.export_zip_btn is not None:
        made.append(panel.export_zip_btn.click(exports.export_bundle, outputs=[panel.export_file],
                                               api_name="export_bundle", **light))
    for event in made:
        event.then(None, inputs=[panel.export_file], js=download_value_js(), queue=False, api_visibility="private")
    refilter: dict[str, Any] = dict(inputs=[panel.browser_state, panel.search_box, panel.chat_list],
                                    outputs=searched, api_visibility="private", **light)
    for event in after_runs:  # a search typed stays applied; then the model's title for the chat, if asked for
        refreshed = event.then(history.refresh, **refresh)
        refreshed.then(history.refilter, **refilter)
        refreshed.then(history.await_title, inputs=[panel.browser_state],
                       outputs=[panel.chat_list, page.column.status], api_visibility="private",
                       **light).then(history.refilter, **refilter)
    for event in (loaded, opened):  # the list these show is every chat: a search typed stays applied
        event.then(history.refilter, **refilter)
    taken = panel.takeover_btn.click(history.take_over, inputs=[panel.browser_state], inputs_kwargs=settings,
                                     outputs=[*view, panel.takeover_btn], api_name="take_over", **heavy)
    taken_run = taken.then(streamer.reattach, **reattach)
    chat_taken.wire(services, page.column, panel.takeover_btn)  # told when another tab takes the chat shown here
    panel.shown.extend([loaded, reattached, watched, opened, opened_run, opened_watch, taken, taken_run])
    if new_chat_event is not None:
        new_chat_event.then(history.after_new_chat, inputs=[panel.browser_state],
                            outputs=[panel.browser_state, panel.chat_list, panel.export_file],
                            api_visibility="private", **light)
        new_chat_event.then(history.takeover_button, outputs=[panel.takeover_btn], api_visibility="private", **light)
    demo.unload(history.forget)
    return history
