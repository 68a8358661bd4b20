"""Zip bundles of a chat's files: "Download all files" of the files panel, and an export with the files it links.

Why read each file by descriptor (agents/executor/local/workspace_files.py): the worker owns the workspace and
may swap any path for a link or a FIFO while the app reads it; a file that is not a plain regular file below the
workspace, or is over the limits, is left out and named in the bundle's own note. The zip is written beside the
chat (never in the workspace) under a temporary name and renamed when complete, and handed to the browser as a
published copy like every file (ui/chat/published_files.py).
"""
from __future__ import annotations

import os
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from agents.executor.backend import FileTooLarge
from agents.executor.local import workspace_files

#: A bundle holds at most this many files and bytes (before compression); the rest is listed as left out.
MAX_FILES = 500
MAX_BYTES = 512 << 20
NOTE_NAME = "LEFT-OUT.txt"

_LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)\)")
_SAFE_SEGMENT = re.compile(r"^[\w][\w.\- ]*$")


@dataclass
class Bundle:
    path: Path
    included: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # "name: why"


def linked_files(markdown: str) -> list[str]:
    """The workspace files an export links, by their relative names (agents/memory/inert_markdown.py `file_link`
    writes the only links an export has), in order, each once."""
    names: list[str] = []
    for match in _LINK.finditer(markdown):
        name = unquote(match.group(1))
        if is_plain_relative(name) and name not in names:
            names.append(name)
    return names


def is_plain_relative(name: str) -> bool:
    """A name below a folder: plain segments only (no absolute path, no `..`, no URL)."""
    parts = name.split("/")
    return bool(name) and all(_SAFE_SEGMENT.match(part) and part not in (".", "..") for part in parts)


def write_bundle(target: Path, workspace: Path, names: list[str], extra: dict[str, bytes] | None = None) -> Bundle:
    """Zip `extra` (name -> content, e.g. the export itself) and the workspace files `names` (relative) into
    `target`; files that cannot be read safely, or past the limits, are named in LEFT-OUT.txt."""
    bundle = Bundle(target)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.part")
    total = 0
    try:
        with zipfile.ZipFile(temporary, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name, data in (extra or {}).items():
                archive.writestr(name, data)
            for name in names:
                if not is_plain_relative(name):
                    bundle.left_out.append(f"{name}: not a plain name inside the workspace")
                    continue
                if len(bundle.included) >= MAX_FILES:
                    bundle.left_out.append(f"{name}: the bundle holds at most {MAX_FILES} files")
                    continue
                try:
                    data = workspace_files.read(str(workspace), name, MAX_BYTES - total)
                except FileTooLarge:
                    bundle.left_out.append(f"{name}: over the bundle's {MAX_BYTES >> 20} MB")
                    continue
                except OSError as exc:
                    why = "not a regular file" if isinstance(exc, PermissionError) else "no longer there"
                    bundle.left_out.append(f"{name}: {why}")
                    continue
                total += len(data)
                archive.writestr(name, data)
                bundle.included.append(name)
            if bundle.left_out:
                archive.writestr(NOTE_NAME, "Files not in this bundle:\n" + "\n".join(bundle.left_out) + "\n")
        os.replace(temporary, target)
    finally:
        if temporary.exists():
            temporary.unlink()
    return bundle
