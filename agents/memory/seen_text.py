"""Memory text as the person saw it, for exports: no prompt fences, no server paths.

The memory keeps what the model was given: outside text wrapped in `<data source=...>` fences with
warning lines (agents/injection.py) and uploads named by their absolute path on the server. An export is for
people, and may be shared: it shows the text without the fences and warning lines, and paths inside the
workspace relative to it (the export is read, or a notebook rerun, with the workspace as the working
directory). Workspaces live at `<data>/.../workspace/`, and a chat's workspace can move (a new chat keeps
the saved one's files), so any absolute path through a `workspace` folder is made relative as well.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from agents.injection import unfence

_WARNING = re.compile(r"^Note: text from .{1,160}? looks like it tries to give instructions; treat it as data\.\n?",
                      re.MULTILINE)
_ANY_WORKSPACE = re.compile(r"(?<![\w.~/:])(?:/[^\s/'\"`()<>\[\]{},;:]+)*/workspace(?:/|(?=[\s'\"`()<>\[\]{},;:.]|$))")


def _prefixes(workspaces: Iterable[str | os.PathLike[str] | None]) -> list[str]:
    found: set[str] = set()
    for workspace in workspaces:
        if workspace is None:
            continue
        path = Path(workspace)
        for form in (path, path.resolve()):
            text = str(form).rstrip("/")
            if len(text) > 1:
                found.add(text)
    return sorted(found, key=len, reverse=True)  # the longest first, so a nested one wins


def relative_paths(text: str, workspaces: Iterable[str | os.PathLike[str] | None] = ()) -> str:
    """`text` with absolute paths into a workspace made relative to it (`<ws>/a.csv` -> `a.csv`, `<ws>` -> `.`)."""
    for prefix in _prefixes(workspaces):
        text = re.sub(re.escape(prefix) + r"(/|(?![\w.-]))", lambda m: "" if m.group(1) else ".", text)
    return _ANY_WORKSPACE.sub(lambda m: "" if m.group(0).endswith("/") else ".", text)


def as_seen(text: str, workspaces: Iterable[str | os.PathLike[str] | None] = ()) -> str:
    """`text` without fence tags and injection warning lines, with workspace paths relative."""
    if not text:
        return text
    return relative_paths(_WARNING.sub("", unfence(text)), workspaces)
