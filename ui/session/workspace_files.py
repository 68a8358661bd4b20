"""Which files of a session's workspace the files panel lists, and in which order.

Why the workspace itself is listed: the chat shows charts inline, but people look for them (and for files
written in subfolders, or restored with a chat) in one place to download. Kept apart from the panel
(ui/panels/files.py) because the session answers with it (`Session.workspace_files`, `Session.remove_file`).
"""
from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from agents.executor.artifacts import PATH_MAX
from agents.executor.tree_walk import TreeWalk, WalkError
from ui.uploads.intake import UploadResult

#: At most this many files are listed (a run that writes thousands should not make every update heavy).
MAX_LISTED = 500
#: Entries looked at, at most: past that the list shows what was found (the disk limit counts them all).
MAX_WALKED = 20_000


class FileRemovalError(ValueError):
    """The file cannot be removed now; the message says why and what to do."""


def _walk(folder: Path) -> list[tuple[int, str]]:
    """(mtime, path) of the regular files under `folder`, at any depth the path of which can still be opened
    (tree_walk.py: by descriptor, links never followed): no hidden entries."""
    found: list[tuple[int, str]] = []
    room = PATH_MAX - len(str(folder)) - 1
    walk = TreeWalk(str(folder), MAX_WALKED)
    try:
        for entry in walk:
            if entry.name.startswith("."):
                walk.skip()
            elif stat.S_ISREG(entry.st.st_mode) and walk.relpath_length(entry.name) < room:
                found.append((entry.st.st_mtime_ns, os.path.join(folder, walk.relpath(entry.name))))
    except WalkError:
        pass  # a listing, not a limit: what was found is shown (the disk limit fails closed on its own walk)
    return found


def listed_files(uploads: Iterable[UploadResult], reported: Iterable[str], workspace: Path) -> list[str]:
    """The workspace paths to list: uploads, then the files the agent reported (`reported`), then every other
    file of the workspace (oldest first); missing ones are left out."""
    ordered = [str(r.path) for r in uploads if r.ok and r.path is not None]
    ordered += list(reported)
    ordered += [path for _, path in sorted(_walk(workspace))]
    return [p for p in dict.fromkeys(ordered) if os.path.isfile(p)][:MAX_LISTED]
