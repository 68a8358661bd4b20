"""The files panel: every file in the workspace (uploads first, charts included), whole names (wrapped; the
sidebar's export box too), and removal that asks first and then really deletes the workspace copy.

Why the workspace itself is listed: the chat shows charts inline, but people look for them (and for files
written in subfolders, or restored with a chat) in one place to download. Why a confirmation of our own:
Gradio's × on a file only drops it from the browser's list (it came back on reload); here the × asks, and
"Delete" removes the file from the workspace, so it is gone for the agent as well.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import gradio as gr

from ui.chat.published_files import NotPublishable
from ui.chat.safe_markdown import neutralize

# Sessions (ui/session/session.py) and the app (ui/app.py) are typed `Any` here: ui.session.session imports this module.
Session = Any
AgentDeckApp = Any

#: At most this many files are listed (a run that writes thousands should not make every update heavy).
MAX_LISTED = 500
MAX_DEPTH = 6

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
                height: 1px !important; overflow: hidden !important; }
"""


class FileRemovalError(ValueError):
    """The file cannot be removed now; the message says why and what to do."""


def _walk(folder: Path, depth: int = 0) -> list[tuple[int, str]]:
    """(mtime, path) of the regular files under `folder`: no hidden entries, no symbolic links."""
    found: list[tuple[int, str]] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return found
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            found.append((info.st_mtime_ns, entry.path))
        elif stat.S_ISDIR(info.st_mode) and depth < MAX_DEPTH:
            found.extend(_walk(Path(entry.path), depth + 1))
    return found


def workspace_files(session: Session) -> list[str]:
    """The files the panel lists, as workspace paths: uploads, then files the agent reported, then every other
    file of the workspace (oldest first); missing ones are left out."""
    ordered = [str(r.path) for r in session.uploads if r.ok and r.path is not None]
    ordered += [f["path"] for f in session.transcript.files]
    ordered += [path for _, path in sorted(_walk(Path(session.workspace)))]
    return [p for p in dict.fromkeys(ordered) if os.path.isfile(p)][:MAX_LISTED]


def shown_paths(session: Session) -> list[str]:
    """The files panel's value: the published copy of each listed file (unpublishable ones left out)."""
    shown = []
    for path in workspace_files(session):
        try:
            shown.append(session.publish(path).path)
        except NotPublishable:
            continue
    return shown


def remove_file(session: Session, relative: str) -> str:
    """Delete a listed workspace file (given relative to the workspace); returns its name."""
    with session.lock:
        if session.running:
            raise FileRemovalError("A run is going: wait for it to finish (or press Stop) before deleting files.")
        workspace = Path(session.workspace)
        target = workspace / relative
        if str(target) not in workspace_files(session):
            raise FileRemovalError(f"{relative} is no longer in the workspace.")
        try:
            os.unlink(target)  # unlink never follows a link; listed files are regular files anyway
        except OSError as exc:
            raise FileRemovalError(f"{relative} could not be deleted: {exc.strerror}.") from exc
        session.uploads = [r for r in session.uploads if r.path is None or Path(r.path) != target]
        session.transcript.files = [f for f in session.transcript.files if Path(f["path"]) != target]
        session.files_version += 1
    return relative


#: Gradio's × on a file of a read-only File only drops it from the browser's list, without telling the server.
#: This listener (capture phase, so it runs before Gradio's) takes the click instead: it hands the file's
#: row (index and name) to a hidden button's event, whose handler asks for confirmation.
INTERCEPT_JS = """
() => {
  if (window.agentdeckFilesRemove) return;
  window.agentdeckFilesRemove = true;
  document.addEventListener('click', (event) => {
    const button = event.target.closest && event.target.closest('#files-panel button.label-clear-button');
    if (!button) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    const row = button.closest('tr');
    const rows = Array.from(document.querySelectorAll('#files-panel tr.file'));
    const cell = row && row.querySelector('td.filename');
    window.agentdeckFileToRemove = rows.indexOf(row) + ':' + (cell ? cell.getAttribute('aria-label') : '');
    const ask = document.querySelector('#file-remove-ask');
    if (ask) ask.click();
  }, true);
}
"""
ASK_JS = "(current) => [window.agentdeckFileToRemove || '']"


def listed_file(session: Session, row: str) -> str | None:
    """The workspace file of the panel's row `"<index>:<name>"` (None if the list has changed since)."""
    index, _, name = str(row).partition(":")
    if not index.isdigit():
        return None
    paths = shown_paths(session)
    sources = workspace_files(session)
    if int(index) >= len(paths) or os.path.basename(paths[int(index)]) != name:
        return None
    return next((s for s in sources if session.publish(s).path == paths[int(index)]), None)


class FilesController:
    """The × of the files panel: ask (the file stays listed), then delete or keep."""

    def __init__(self, app: AgentDeckApp) -> None:
        self.app = app

    def _session(self, request: gr.Request | None) -> Session | None:
        return self.app.registry.peek(getattr(request, "session_hash", None) or "anonymous")

    def ask(self, row: Any, request: gr.Request) -> tuple:
        """(pending file, confirmation box, its question)."""
        session = self._session(request)
        source = listed_file(session, row) if session is not None else None
        if source is None:
            gr.Warning("That file is no longer in the workspace (the list has changed): try again.")
            return None, gr.update(visible=False), ""
        relative = os.path.relpath(source, session.workspace)
        question = (f"Delete **{neutralize(relative)}** from the workspace? The agent will no longer see it, "
                    "and it cannot be undone.")
        return relative, gr.update(visible=True), question

    def confirm(self, pending: Any, request: gr.Request) -> tuple:
        """(files panel, pending file, confirmation box)."""
        session = self._session(request)
        if session is None or not isinstance(pending, str) or not pending:
            return gr.skip(), None, gr.update(visible=False)
        try:
            name = remove_file(session, pending)
        except FileRemovalError as exc:
            gr.Warning(str(exc))
            return shown_paths(session), None, gr.update(visible=False)
        gr.Info(f"Deleted {name}.")
        return shown_paths(session), None, gr.update(visible=False)

    @staticmethod
    def keep() -> tuple:
        return None, gr.update(visible=False)


def build_delete_confirm() -> tuple[Any, ...]:
    """Under the files panel: the confirmation (hidden until a × is pressed) and the off-screen row holder
    and button the × listener uses. Returns (box, question, yes, no, pending, row, ask)."""
    row = gr.Textbox("", elem_id="file-remove-row", elem_classes="ad-offscreen", show_label=False, container=False)
    ask = gr.Button("Ask to remove", elem_id="file-remove-ask", elem_classes="ad-offscreen")
    with gr.Column(visible=False, elem_id="file-delete-confirm", variant="panel") as box:
        question = gr.Markdown("", elem_id="file-delete-question", padding=True)
        with gr.Row():
            yes = gr.Button("🗑 Delete file", variant="stop", size="sm", elem_id="file-delete-yes")
            no = gr.Button("Keep it", size="sm", elem_id="file-delete-no")
    return box, question, yes, no, gr.State(None), row, ask


def wire_delete_confirm(app: AgentDeckApp, demo: gr.Blocks, files_panel: Any, parts: tuple[Any, ...]) -> None:
    box, question, yes, no, pending, row, ask = parts
    controller = FilesController(app)
    light = dict(concurrency_limit=None, show_progress="hidden")
    demo.load(None, js=INTERCEPT_JS)
    ask.click(controller.ask, inputs=[row], outputs=[pending, box, question], js=ASK_JS, api_visibility="private",
              **light)
    yes.click(controller.confirm, inputs=[pending], outputs=[files_panel, pending, box], api_name="delete_file", **light)
    no.click(controller.keep, outputs=[pending, box], api_visibility="private", **light)
