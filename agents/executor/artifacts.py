"""Files created or changed in the workspace by a run, found by the app (not the worker).

Why the app scans: the worker runs untrusted code and could lie about paths;
the app compares two snapshots it took itself, never follows symbolic links,
and reports regular files only.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Literal

IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".svg", ".gif", ".webp"})
MAX_ENTRIES = 20000
MAX_DEPTH = 12

Snapshot = dict[str, tuple[int, int]]


@dataclass(frozen=True)
class Artifact:
    """A file a run created or changed.

    ``path`` is relative to the sandbox's workdir (POSIX separators);
    ``abs_path`` is the absolute path on the app's side.
    """

    path: str
    abs_path: str
    kind: Literal["image", "file"]
    size: int
    mtime: float
    created: bool


def snapshot(workdir: str) -> Snapshot:
    """Map relative path -> (size, mtime_ns) for regular files under workdir."""
    found: Snapshot = {}
    stack = [(workdir, "", 0)]
    while stack and len(found) < MAX_ENTRIES:
        folder, rel, depth = stack.pop()
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for entry in entries:
                if len(found) >= MAX_ENTRIES:
                    break
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                name = f"{rel}{entry.name}"
                if stat.S_ISDIR(st.st_mode):
                    if depth < MAX_DEPTH:
                        stack.append((entry.path, name + "/", depth + 1))
                elif stat.S_ISREG(st.st_mode):
                    found[name] = (st.st_size, st.st_mtime_ns)
    return found


def diff(workdir: str, before: Snapshot, after: Snapshot) -> list[Artifact]:
    """Artifacts for files that are new or whose size or mtime changed."""
    out = []
    for rel, (size, mtime_ns) in sorted(after.items()):
        old = before.get(rel)
        if old == (size, mtime_ns):
            continue
        ext = os.path.splitext(rel)[1].lower()
        out.append(Artifact(path=rel, abs_path=os.path.join(workdir, rel),
                            kind="image" if ext in IMAGE_EXTENSIONS else "file",
                            size=size, mtime=mtime_ns / 1e9, created=old is None))
    return out
