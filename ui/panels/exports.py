"""Exports of the open chat (Markdown, notebook): written next to the saved chat and handed to the browser as a
published copy (ui/chat/published_files.py).

Kept apart from the side list's handlers (ui/panels/history.py): an export reads the open chat as it is (its
memory, or the saved one, and the messages sent) and changes nothing. The export shows the person's words and
files, not the task text the model was given (agents/memory/export.py).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr

from agents.memory import AgentMemory
from ui.chat.published_files import NotPublishable
from ui.panels.bundles import NOTE_NAME as LEFT_OUT
from ui.saved.owners import tab_key
from ui.saved.store import ChatStoreError
from ui.services import Services
from ui.session.session import Session
from ui.session.workspace_access import WorkspaceFiles


class ChatExports:
    """The export buttons' handlers, built from the services (ui/services.py). No state of their own."""

    def __init__(self, services: Services) -> None:
        self.services = services

    def _export_source(self, request: gr.Request) -> tuple[Session, AgentMemory, Path, str, list[dict[str, Any]]]:
        """The open chat's session, memory, export folder, title and messages sent (the export shows the
        person's words and files, not the task text the model was given)."""
        session = self.services.registry.peek(tab_key(request))
        if session is None:
            raise ChatStoreError("Nothing to export yet.")
        with session.lock:
            if session.running:
                raise ChatStoreError("Wait for the run to finish before exporting.")
            memory = getattr(session.agent, "memory", None)
            chat = session.record.saved
            turns = session.record.turns
            if (memory is None or not memory.steps) and chat is not None:
                memory, metadata = self.services.store.load_memory(chat)
                turns = turns or list(metadata.get("turns") or [])
            if memory is None or not memory.steps:
                raise ChatStoreError("Nothing to export yet: send a message first.")
            meta = chat.meta() if chat is not None else None
            title = meta.title if meta else "AgentDeck conversation"
            folder = (chat.exports if chat is not None else session.record.root / "exports")
            folder.mkdir(parents=True, exist_ok=True)
            return session, memory, folder, title, turns

    @staticmethod
    def _file_stem(title: str) -> str:
        """The export's file name from the chat's title: its words only, not the " · penguins.csv" of the files
        the title names (a download read `…_penguins.csv.zip`), and no dots."""
        words = title.split(" · ")[0]
        stem = re.sub(r"[^A-Za-z0-9_-]+", "_", words).strip("_-")[:60]
        return stem or "agentdeck-chat"

    def export_markdown(self, request: gr.Request) -> Any:
        from agents.memory.export import to_markdown

        return self._export(request, ".md", lambda memory, files, path, title, turns: path.write_text(
            to_markdown(memory, title=title, workspace=files.root, turns=turns), encoding="utf-8"))

    def export_notebook(self, request: gr.Request) -> Any:
        from agents.memory.export_notebook import save_notebook

        return self._export(request, ".ipynb", lambda memory, files, path, title, turns: save_notebook(
            memory, path, workspace=files.root, title=title, turns=turns, read_file=files.read))

    def export_bundle(self, request: gr.Request) -> Any:
        """A zip of the Markdown export, every workspace file it links (charts, tables the agent wrote), so the
        links work where the zip is unpacked, and every file the person uploaded, linked or not (bundles.py
        `export_files`)."""
        from agents.memory.export import to_markdown
        from ui.panels.bundles import BundleBusy, export_files, write_bundle

        def write(memory: AgentMemory, files: WorkspaceFiles, path: Path, title: str,
                  turns: list[dict[str, Any]]) -> None:
            markdown = to_markdown(memory, title=title, workspace=files.root, turns=turns)
            bundle = write_bundle(path, files, export_files(markdown, turns),
                                  {f"{path.stem}.md": markdown.encode("utf-8")})
            if bundle.left_out:
                gr.Warning(f"{len(bundle.left_out)} linked file(s) could not be added; the zip's {LEFT_OUT} "
                           "says which and why.")

        try:
            return self._export(request, ".zip", write)
        except BundleBusy as exc:
            gr.Warning(str(exc))
            return gr.skip()

    def _export(self, request: gr.Request, extension: str, write: Callable[..., Any]) -> Any:
        """Write the open chat's export next to it with `write(memory, files, path, title, turns)` (`files`: the
        chat's WorkspaceFiles, whatever runs its sandbox: ui/session/workspace_access.py); its published copy (the
        browser downloads published files only: ui/chat/published_files.py)."""
        try:
            session, memory, folder, title, turns = self._export_source(request)
        except ChatStoreError as exc:
            gr.Warning(str(exc))
            return gr.skip()
        path = folder / f"{self._file_stem(title)}{extension}"
        write(memory, session.record.files, path, title, turns)
        try:
            return session.record.publish(path).path
        except NotPublishable as exc:
            gr.Warning(f"The export was written but cannot be downloaded: {exc}.")
            return gr.skip()
