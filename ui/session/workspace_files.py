"""Which files of a session's workspace the files panel lists, and in which order.

Why the workspace itself is listed: the chat shows charts inline, but people look for them (and for files
written in subfolders, or restored with a chat) in one place to download. Kept apart from the panel
(ui/panels/files.py) because the session answers with it (`Session.workspace_files`, `Session.remove_file`).
"""
from __future__ import annotations

import os
from collections.abc import Iterable

from ui.session.workspace_access import MAX_WALKED, WorkspaceFiles
from ui.uploads.intake import UploadResult

#: At most this many files are listed (a run that writes thousands should not make every update heavy).
MAX_LISTED = 500
__all__ = ["MAX_LISTED", "MAX_WALKED", "FileRemovalError", "listed_files"]


class FileRemovalError(ValueError):
    """The file cannot be removed now; the message says why and what to do."""


def listed_files(uploads: Iterable[UploadResult], reported: Iterable[str], files: WorkspaceFiles) -> list[str]:
    """The workspace paths to list (`files.root` joined with each name): uploads, then the files the agent
    reported (`reported`), then every other file of the workspace (oldest first); missing ones are left out.
    Read through `files` (ui/session/workspace_access.py): whatever runs the sandbox, its listing is the truth."""
    present = files.list()
    root = str(files.root)
    ordered = [str(r.path) for r in uploads if r.ok and r.path is not None]
    ordered += list(reported)
    ordered += [os.path.join(root, name) for name, _ in sorted(present.items(), key=lambda kv: (kv[1].mtime_ns, kv[0]))]
    return [p for p in dict.fromkeys(ordered) if os.path.relpath(p, root) in present][:MAX_LISTED]
