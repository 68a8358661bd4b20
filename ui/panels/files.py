"""The files panel: every file in the workspace (uploads first, charts included, listed by the session:
ui/session/workspace_files.py), whole names (wrapped; the sidebar's export box too), and removal that asks
first and then really deletes the workspace copy.

Why a confirmation of our own: Gradio's × on a file only drops it from the browser's list (it came back on
reload); here the × asks, and "Delete" removes the file from the workspace, so it is gone for the agent too.
"""
from __future__ import annotations

import os
from typing import Any

import gradio as gr

from ui.chat.published_files import NotPublishable
from ui.chat.safe_markdown import neutralize
from ui.session.chat_record import ChatRecord
from ui.session.registry import SessionRegistry
from ui.session.session import Session
from ui.session.workspace_files import FileRemovalError
from ui.web.gradio_dom import ASK_JS, INTERCEPT_JS  # the × listener knows Gradio's File markup

CSS = """
#files-panel tr.file td.filename, #export-file tr.file td.filename {
    display: block; flex: 1 1 0; min-width: 0; overflow: visible; font-size: 0; }
#files-panel td.filename .stem, #files-panel td.filename .ext,
#export-file td.filename .stem, #export-file td.filename .ext {
    display: inline; font-size: var(--text-md); white-space: normal; overflow-wrap: anywhere; overflow: visible;
    text-overflow: clip; }
#files-panel tr.file td.download, #export-file tr.file td.download { flex: none; min-width: 0; width: auto; }
#files-panel tr.file td:last-child, #export-file tr.file td:last-child { flex: none; }
#file-delete-confirm { border: 1px solid var(--border-color-accent); }
.ad-offscreen { position: absolute !important; left: -10000px !important; width: 1px !important;
                height: 1px !important; overflow: hidden !important; visibility: hidden !important; }
"""


def listed_file(record: ChatRecord, row: str) -> str | None:
    """The workspace file of the panel's row `"<index>:<name>"` (None if the list has changed since)."""
    index, _, name = str(row).partition(":")
    if not index.isdigit():
        return None
    paths = record.file_paths()
    sources = record.workspace_files()
    if int(index) >= len(paths) or os.path.basename(paths[int(index)]) != name:
        return None
    return next((s for s in sources if record.publish(s).path == paths[int(index)]), None)


class FilesController:
    """The × of the files panel: ask (the file stays listed), then delete or keep."""

    def __init__(self, registry: SessionRegistry) -> None:
        self.registry = registry

    def _session(self, request: gr.Request | None) -> Session | None:
        return self.registry.peek(getattr(request, "session_hash", None) or "anonymous")

    def ask(self, row: Any, request: gr.Request) -> tuple:
        """(pending file, confirmation box, its question)."""
        session = self._session(request)
        source = listed_file(session.record, row) if session is not None else None
        if session is None or source is None:
            gr.Warning("That file is no longer in the workspace (the list has changed): try again.")
            return None, gr.update(visible=False), ""
        relative = os.path.relpath(source, session.record.workspace)
        question = (f"Delete **{neutralize(relative)}** from the workspace? The agent will no longer see it, "
                    "and it cannot be undone.")
        return relative, gr.update(visible=True), question

    def confirm(self, pending: Any, request: gr.Request) -> tuple:
        """(files panel, pending file, confirmation box)."""
        session = self._session(request)
        if session is None or not isinstance(pending, str) or not pending:
            return gr.skip(), None, gr.update(visible=False)
        try:
            name = session.remove_file(pending)
        except FileRemovalError as exc:
            gr.Warning(str(exc))
            return session.record.file_paths(), None, gr.update(visible=False)
        gr.Info(f"Deleted {name}.")
        return session.record.file_paths(), None, gr.update(visible=False)

    @staticmethod
    def keep() -> tuple:
        return None, gr.update(visible=False)


def download_all(registry: SessionRegistry, request: gr.Request) -> Any:
    """"Download all files": one zip of every file the panel lists (ui/panels/bundles.py), as a published copy."""
    from pathlib import Path

    from ui.panels.bundles import NOTE_NAME, BundleBusy, write_bundle

    session = registry.peek(getattr(request, "session_hash", None) or "anonymous")
    record = session.record if session is not None else None
    sources = record.workspace_files() if record is not None else []
    if record is None or not sources:
        gr.Warning("There are no files in the workspace yet.")
        return gr.skip()
    workspace = Path(record.workspace)
    names = [os.path.relpath(source, workspace) for source in sources]
    folder = Path(record.root) / "downloads"
    folder.mkdir(exist_ok=True)
    try:
        bundle = write_bundle(folder / "agentdeck-files.zip", record.files, names)
    except BundleBusy as exc:
        gr.Warning(str(exc))
        return gr.skip()
    if bundle.left_out:
        gr.Warning(f"{len(bundle.left_out)} file(s) could not be added; the zip's {NOTE_NAME} says which and why.")
    try:
        return gr.update(value=record.publish(bundle.path).path, visible=True)
    except NotPublishable as exc:
        gr.Warning(f"The zip was made but cannot be downloaded: {exc}.")
        return gr.skip()


def download_value_js() -> str:
    """The browser side of a download button (the files panel's zip, the chat's exports): once the server has put
    the file in its box, start its download from the box's new value (its URL and name), so one click downloads
    rather than leaving a file entry to click. Reading the value, not the box's link, never clicks the link of
    the file the box showed before (the page redraws the box just after the event ends)."""
    return ("(file) => { if (!file || !file.url) return; const a = document.createElement('a'); "
            "a.href = file.url; a.download = file.orig_name || ''; a.style.display = 'none'; "
            "document.body.appendChild(a); a.click(); a.remove(); }")


def build_download_all() -> tuple[Any, Any]:
    """Under the files panel: the "Download all files" button and the box its zip appears in."""
    button = gr.Button("⬇ Download all files (zip)", size="sm", elem_id="files-download-all")
    box = gr.File(label="All files (zip)", elem_id="files-zip", interactive=False, visible=False)
    return button, box


def wire_download_all(registry: SessionRegistry, parts: tuple[Any, Any]) -> None:
    button, box = parts

    def handler(request: gr.Request) -> Any:
        return download_all(registry, request)

    made = button.click(handler, outputs=[box], api_name="download_all_files", concurrency_limit=None,
                        show_progress="hidden")
    made.then(None, inputs=[box], js=download_value_js(), queue=False, api_visibility="private")


def build_delete_confirm() -> tuple[Any, ...]:
    """Under the files panel: the confirmation (hidden until a × is pressed) and the off-screen row holder
    and button the × listener uses (hidden as well as off-screen, so Tab never stops on them). Returns (box,
    question, yes, no, pending, row, ask)."""
    row = gr.Textbox("", elem_id="file-remove-row", elem_classes="ad-offscreen", show_label=False, container=False)
    ask = gr.Button("Ask to remove", elem_id="file-remove-ask", elem_classes="ad-offscreen")
    with gr.Column(visible=False, elem_id="file-delete-confirm", variant="panel") as box:
        question = gr.Markdown("", elem_id="file-delete-question", padding=True)
        with gr.Row():
            yes = gr.Button("🗑 Delete file", variant="stop", size="sm", elem_id="file-delete-yes")
            no = gr.Button("Keep it", size="sm", elem_id="file-delete-no")
    return box, question, yes, no, gr.State(None), row, ask


def wire_delete_confirm(registry: SessionRegistry, demo: gr.Blocks, files_panel: Any,
                        parts: tuple[Any, ...]) -> None:
    box, question, yes, no, pending, row, ask = parts
    controller = FilesController(registry)
    light: dict[str, Any] = dict(concurrency_limit=None, show_progress="hidden")
    demo.load(None, js=INTERCEPT_JS)
    ask.click(controller.ask, inputs=[row], outputs=[pending, box, question], js=ASK_JS, api_visibility="private",
              **light)
    yes.click(controller.confirm, inputs=[pending], outputs=[files_panel, pending, box], api_name="delete_file",
              **light)
    no.click(controller.keep, outputs=[pending, box], api_visibility="private", **light)
