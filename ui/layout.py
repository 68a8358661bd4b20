"""The Blocks layout: chat, approvals (ui/panels/approval_panel.py) and input on the left; files and settings on
the right; the saved chats in the sidebar. It composes the page: each panel is wired from the services.

Stable element ids used by tests and outside checks: chat-column, chat, task-input, stop-btn, new-chat-btn,
files-panel, model-picker (plus run-status, run-clock, approval-mode, approval-panel and the ids in
ui/panels/approval_panel.py and ui/panels/retry.py, settings-*).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import gradio as gr

from ui import settings_form
from ui.api import endpoints as api_endpoints
from ui.app import RECORDED_DEMOS, AgentDeckApp
from ui.chat.stream_outputs import StreamOutputs
from ui.components import ChatColumn, Page
from ui.model_choice import model_note
from ui.panels import approval_panel, approvals, chat_delete, history_layout, retry
from ui.panels import files as files_panel_ui
from ui.tool_offer import default_tool_names
from ui.web import chat_view, focus, gradio_dom, responsive, sign_in
from ui.web.gradio_callers import hide_from_api
from ui.web.gradio_compat import chat_examples
from ui.web.input_lock import lock_on, unlock_after

CSS = """
#chat .ad-error { color: #b42318; background: #fef3f2; border: 1px solid #fecdca; border-radius: 4px;
                  padding: 0 6px; font-weight: 600; }
#run-status { color: var(--body-text-color-subdued); min-height: 1.5em; }
#run-status small { font-size: 0.8em; }
#model-note { font-size: 0.85em; color: var(--body-text-color-subdued); }
#files-panel { min-height: 120px; }
.ad-header h1 { margin-bottom: 0; }
.ad-header p { margin-top: 2px; color: var(--body-text-color-subdued); }
"""
# The API page's MCP tab describes Gradio's own MCP mode (the app's API endpoints as tools), which cannot run with the
# mcp SDK the project pins; the app's MCP endpoint is its own (ui/mcp/, in the README): the page shows only the ways
# that work. The tab is the one with Gradio's MCP icon.
CSS += ".snippet:has(> img[src*='mcp-']) { display: none !important; }\n"
CSS += approval_panel.CSS + files_panel_ui.CSS + chat_view.CSS + responsive.CSS + chat_delete.CSS + retry.CSS
CSS += focus.CSS

PLACEHOLDER = (
    "**Ask the agent to analyse data, write code or make charts.**  \n"
    "Attach CSV, TSV, Excel, JSON, Parquet, PDF, text, Markdown or HTML files with 📎. "
    "Follow-up messages continue the same run."
)


def build_blocks(app: AgentDeckApp) -> gr.Blocks:
    """The page: the chat's handlers (`app`) wired to the chat column; each panel built and wired from the
    services (ui/services.py), never from the app."""
    services = app.services
    config = services.config
    # Uploads Gradio stored and the app already copied into a workspace go after an hour (checked every 15 min).
    with gr.Blocks(title="AgentDeck", fill_height=True, delete_cache=(900, 3600)) as demo:
        api_endpoints.wire(demo, services)  # first: they keep their names (ui/api/endpoints.py)
        history = history_layout.build_history_panel(services)  # the side list of saved chats, exports
        with gr.Row(elem_classes="ad-header"):
            gr.Markdown("# AgentDeck\nA workbench for code-writing agents: watch each step, code, log and chart "
                        "as it happens.")
        with gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=420, elem_id="chat-column"):
                chat = gr.Chatbot(
                    elem_id="chat", label="Agent", height="68vh", show_label=False, layout="panel",
                    placeholder=PLACEHOLDER, examples=chat_examples(app.examples),
                    buttons=["copy_all"], feedback_options=None, autoscroll=True,
                    group_consecutive_messages=False,
                )
                status = gr.Markdown("", elem_id="run-status")
                approval = approval_panel.build_approval_panel()  # hidden until the agent waits for a decision
                editor = retry.build_editor()  # the edit box of ✏️ Edit, hidden until it is pressed
                task_input = gr.MultimodalTextbox(
                    elem_id="task-input", file_count="multiple", sources=["upload"], show_label=False,
                    placeholder="Type a task, attach data files, press Enter…", autofocus=True, max_lines=12,
                )
                with gr.Row():
                    stop_btn = gr.Button("⏹ Stop", elem_id="stop-btn", variant="stop", size="sm")
                    new_btn = gr.Button("🗒 New chat", elem_id="new-chat-btn", variant="secondary", size="sm")
                    editor.retry_btn, editor.edit_btn = retry.build_buttons()  # ui/panels/retry.py
                    history.takeover_btn = gr.Button("📑 Take over here", elem_id="take-over-btn", variant="primary",
                                                     size="sm", visible=False)  # ui/panels/history.py: claim
                with gr.Row(elem_id="recorded-demos"):
                    demo_buttons = [gr.Button(d["label"], size="sm", variant="secondary", elem_id=f"recorded-demo-{i}")
                                    for i, d in enumerate(RECORDED_DEMOS)]
            with gr.Column(scale=1, min_width=280):
                sign_in_md = None
                if config.hf_login:  # on a Space with OAuth, or locally where Gradio's mock works (ui/web/sign_in.py)
                    gr.LoginButton(elem_id="hf-login")
                    sign_in_md = gr.Markdown(sign_in.SIGNED_OUT_NOTE, elem_id="sign-in-note")
                model = gr.Dropdown(config.visitor_models(), value=config.model, label="Model",
                                    allow_custom_value=config.free_choice, elem_id="model-picker",
                                    info=("Single-user install: any model string is accepted."
                                          if config.free_choice else
                                          "The models this server can reach; other names are not accepted."))
                note = gr.Markdown(model_note(config.model, config.configured_model), elem_id="model-note")
                files_panel = gr.File(label="Files (uploads and outputs)", elem_id="files-panel",
                                      file_count="multiple", interactive=False)
                delete_confirm = files_panel_ui.build_delete_confirm()  # the × asks before deleting
                download_all = files_panel_ui.build_download_all()  # one zip of every listed file
                mode_selector = approval_panel.build_mode_selector(config.approval_mode)
                approval_covers = approval_panel.build_mode_coverage(config.approval_mode, default_tool_names())
                with gr.Accordion("⚙️ Agent settings", open=False, elem_id="settings"):
                    form = settings_form.build(config, model)  # ui/settings_form.py: every setting but the model
                    gr.Markdown("Settings apply from your next message. A changed model or agent type starts a "
                                "new agent and new imports a new sandbox (the conversation, its variables and "
                                "the files go on); the others change only the next run.")
        clock = gr.JSON(visible=False, elem_id="run-clock")
        page = Page(ChatColumn(chat, task_input, files_panel, status, clock), form)
        services.streamer.outputs = StreamOutputs(page.column)

        settings = page.form.by_name()  # the handlers take the form by name (ui/settings_form.py)
        outputs = page.column.outputs()
        approval_mode = mode_selector.mode
        approval_panel.wire_mode_coverage(approval_mode, page.form.tools, approval_covers)
        # The streamer renders (ui/chat/streamer.py).
        run_options: dict[str, Any] = dict(outputs=outputs, concurrency_limit=config.max_runs, concurrency_id="runs",
                                           show_progress="hidden", postprocess=False)
        lock_on(task_input.submit)  # before the run's listener: see ui/web/input_lock.py
        lock_on(chat.example_select)
        with_mode = {**settings, "approval_mode": approval_mode}  # the API's order: the form, then the mode
        submitted = task_input.submit(app.run, inputs=[task_input], inputs_kwargs=with_mode, api_name="run",
                                      **run_options)
        example = chat.example_select(app.run_example, inputs_kwargs=with_mode, api_name="run_example",
                                      **run_options)
        unlock_after(submitted)
        unlock_after(example)
        recorded = [button.click(recorded_handler(app, i), api_name=f"recorded_demo_{i}", **run_options)
                    for i, button in enumerate(demo_buttons)]
        resent = retry.wire(services, editor, page, approval_mode,  # Retry, Edit and resend
                            close_on=[new_btn.click, history.chat_list.select, history.takeover_btn.click])
        stopped = stop_btn.click(app.stop, outputs=[status], api_name="stop", concurrency_limit=None,
                                 show_progress="hidden", js=gradio_dom.PIN_CHAT_END_JS)
        stopped.then(app.after_stop, outputs=outputs, concurrency_limit=None, show_progress="hidden",
                     postprocess=False)  # a run paused at a decision: its end shown (no stream of its own does)
        cleared = new_btn.click(app.new_chat, outputs=outputs, api_name="new_chat", concurrency_limit=None,
                      show_progress="hidden")
        sign_in.wire(demo, config, model, note, history.list_note, sign_in_md)  # notes for a signed-in visitor
        decisions = approvals.wire(demo, services, approval, mode_selector, page,
                                   after=[submitted, example, *resent, stopped, cleared])
        history_layout.wire_history_panel(demo, services, history, page,
                                          after_runs=[submitted, example, *recorded, *resent], new_chat_event=cleared,
                                          approval_mode=approval_mode,
                                          decision_panel=approval.view_outputs(task_input)[:-1],
                                          elsewhere=decisions.elsewhere)
        approvals.show_after(decisions, approval, task_input, history.shown)  # a reopened chat's decision
        files_panel_ui.wire_delete_confirm(services.registry, demo, files_panel, delete_confirm)
        files_panel_ui.wire_download_all(services.registry, download_all)
        responsive.wire(demo)
        chat_view.wire(demo)
        demo.unload(app.on_unload)
        # The API is its own endpoints (ui/api/): the page's events, with their component tuples, are not offered.
        hide_from_api(demo, keep=set(api_endpoints.API_NAMES))
    return demo


def recorded_handler(app: AgentDeckApp, index: int) -> Callable[..., Iterator[tuple]]:
    """The click handler of one recorded-analysis button (Gradio reads the request from the type hint)."""

    def play(request: gr.Request) -> Iterator[tuple]:
        yield from app.run_recorded(index, request)

    return play
