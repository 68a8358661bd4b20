"""The files of one message, taken in with per-message and per-workspace limits.

Why: one visitor's uploads share the server's single preview child and its disk with everyone. Without a
cap, fifty slow spreadsheets in one message keep every other visitor's previews waiting, and repeated
uploads fill the disk even though each file is under the size limit. Files over a limit are refused by
name with the reason; the rest of the message goes on.
"""
from __future__ import annotations

import os
from pathlib import Path

from ui.config.current import current_settings
from ui.session.workspace_access import DiskFiles, WorkspaceFiles
from ui.uploads.intake import UploadResult, human_size, ingest_upload

WORKSPACE_FACTOR = 4  # the workspace holds this many maximum-size uploads by default


def max_files_per_message() -> int:
    """AGENTDECK_MAX_FILES_PER_MESSAGE, from the checked settings (ui/config/)."""
    return current_settings().max_files_per_message


def workspace_quota_bytes(max_upload_bytes: int) -> int:
    """AGENTDECK_MAX_WORKSPACE_MB, else WORKSPACE_FACTOR uploads of the largest size."""
    megabytes = current_settings().max_workspace_mb
    return int(megabytes * 1024 * 1024) if megabytes is not None else WORKSPACE_FACTOR * max_upload_bytes


def workspace_bytes(workspace: Path | WorkspaceFiles) -> int:
    """Bytes the workspace takes, counted as the sandbox's disk limit counts them (an unfinished walk counts as
    full), through its `WorkspaceFiles` (a folder of the app's: no sandbox yet)."""
    return (DiskFiles(workspace) if isinstance(workspace, Path) else workspace).used_bytes()


def ingest_uploads(files: list[tuple[str, str]], workspace: Path | WorkspaceFiles, max_upload_bytes: int,
                   max_files: int | None = None, quota_bytes: int | None = None) -> list[UploadResult]:
    """Each file of a message (as Gradio received it) previewed and copied into the workspace (its
    `WorkspaceFiles`: ui/session/workspace_access.py), in order, or refused with its reason."""
    max_files = max_files_per_message() if max_files is None else max_files
    quota = workspace_quota_bytes(max_upload_bytes) if quota_bytes is None else quota_bytes
    used = workspace_bytes(workspace) if files else 0
    results: list[UploadResult] = []
    for index, (path, name) in enumerate(files):
        size = _size(path)
        if index >= max_files:
            results.append(UploadResult(name, size, error=f"`{name}` was not added: at most {max_files} files "
                                                           "can be sent in one message. Send it with the next one."))
            continue
        if used + size > quota:
            results.append(UploadResult(name, size, error=f"`{name}` was not added: this chat's files would take "
                                                           f"more than {human_size(quota)}. Start a new chat or "
                                                           "delete files from this one."))
            continue
        result = ingest_upload(path, workspace, name, max_upload_bytes, room=quota - used)
        if result.ok:
            used += result.stored_bytes  # what it takes stored (a text re-encoded as UTF-8 may be bigger)
        results.append(result)
    return results


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
