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

from ui.uploads.intake import UploadResult

#: At most this many files are listed (a run that writes thousands should not make every update heavy).
MAX_LISTED = 500
MAX_DEPTH = 6


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


def listed_files(uploads: Iterable[UploadResult], reported: Iterable[str], workspace: Path) -> list[str]:
    """The workspace paths to list: uploads, then the files the agent reported (`reported`), then every other
    file of the workspace (oldest first); missing ones are left out."""
    ordered = [str(r.path) for r in uploads if r.ok and r.path is not None]
    ordered += list(reported)
    ordered += [path for _, path in sorted(_walk(workspace))]
    return [p for p in dict.fromkeys(ordered) if os.path.isfile(p)][:MAX_LISTED]
