"""Zip bundles of a chat's files: "Download all files" of the files panel, and an export with the files it links.

Why read each file through ui/session/workspace_access.py (by descriptor on one disk): the worker owns the
workspace and may swap any path for a link or a FIFO while the app reads it; a file that is not a plain
regular file below the workspace, or is over the limits, is left out and named in the bundle's own note. The zip is
written beside the chat (never in the workspace) under a temporary name and renamed when complete,
and handed to the browser as a published copy like every file (ui/chat/published_files.py).
"""
from __future__ import annotations

import os
import re
import secrets
import threading
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote

from agents.executor.backend import FileTooLarge
from ui.session.workspace_access import DiskFiles, WorkspaceFiles

#: A bundle holds at most this many files and bytes (before compression); the rest is listed as left out.
MAX_FILES = 500
MAX_BYTES = 512 << 20
NOTE_NAME = "LEFT-OUT.txt"
CHUNK_BYTES = 1 << 20

#: A link as `inert_markdown.file_link` writes it: a label without brackets, a target percent-encoded (`quote`).
#: Neither part can run past the next `[` (the old `[^\]]*`/`[^)]*` rescanned the rest of the line from every
#: `[`: an export quoting "[a](" 20,000 times, which code can print, took 250 s to scan).
_LINK = re.compile(r"!?\[[^\[\]\n]*\]\(([\w.~/%-]+)\)")
#: What a name's segment may not hold: what any common system refuses in a file name (so the zip unpacks
#: everywhere; `\\` and `:` would also be separators or drives there).
_UNSAFE_IN_SEGMENT = frozenset('\\:*?"<>|')


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


def export_files(markdown: str, turns: list[dict]) -> list[str]:
    """What "Markdown + its files" holds besides the Markdown: every workspace file it links, then every file the
    person uploaded in the chat (`turns`' "uploads", each once) even where no answer links it: the analysis
    depends on the person's data, and a zip without it could not be re-run or checked."""
    names = linked_files(markdown)
    for turn in turns:
        for item in turn.get("uploads") or [] if isinstance(turn, dict) else []:
            name = str(item.get("name") or "") if isinstance(item, dict) else ""
            if is_plain_relative(name) and name not in names:
                names.append(name)
    return names


def is_plain_relative(name: str) -> bool:
    """A name below a folder: plain segments only (no absolute path, no `..`, no URL)."""
    return bool(name) and all(_plain_segment(part) for part in name.split("/"))


def _plain_segment(part: str) -> bool:
    """One folder's or file's name as people name files ("report (1).csv", "Q3 + Q4, final.xlsx"): printable
    only (no line break, control or bidi character), not hidden or `..`, no trailing space or dot (some systems
    drop them, so two names would unpack as one), nothing a common system refuses."""
    return (bool(part) and part.isprintable() and not part.startswith(".") and not part.endswith((" ", "."))
            and not _UNSAFE_IN_SEGMENT.intersection(part))


def _shown(name: str) -> str:
    """`name` on one line for LEFT-OUT.txt: a control character (a newline the code put in a file name) is written
    as an escape, so no name can add lines of its own to the note."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in name)


class BundleBusy(Exception):
    """A zip of the same files is being written now (a second click, or a visitor's loop over the API)."""


_writing: set[str] = set()  # the targets being written now
_writing_lock = threading.Lock()


def write_bundle(target: Path, workspace: Path | WorkspaceFiles, names: list[str],
                 extra: dict[str, bytes] | None = None) -> Bundle:
    """Zip `extra` (name -> content, e.g. the export itself) and the workspace files `names` (relative) into
    `target`; files that cannot be read safely, or past the limits, are named in LEFT-OUT.txt.

    One bundle of a target at a time (BundleBusy otherwise), each file streamed from its descriptor: the memory a
    bundle takes does not grow with the files, so many requests at once cannot exhaust the server's memory."""
    key = str(target)
    with _writing_lock:
        if key in _writing:
            raise BundleBusy("A zip of these files is being made already: wait for it, then try again.")
        _writing.add(key)
    try:
        files = DiskFiles(workspace) if isinstance(workspace, Path) else workspace
        return _write(target, files, names, extra or {})
    finally:
        with _writing_lock:
            _writing.discard(key)


def _write(target: Path, files: WorkspaceFiles, names: list[str], extra: dict[str, bytes]) -> Bundle:
    bundle = Bundle(target)
    # The bundle's own files (the export, the note): a workspace file of one of these names (the code can write any
    # name, and unpacking is case-blind on some systems) would be a second entry that replaces ours when unpacked.
    reserved = {name.casefold() for name in (*extra, NOTE_NAME)}
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(8)}.part")
    total = 0
    try:
        with zipfile.ZipFile(temporary, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name, data in extra.items():
                archive.writestr(name, data)
            for name in names:
                if not is_plain_relative(name):
                    bundle.left_out.append(f"{_shown(name)}: not a plain name inside the workspace")
                    continue
                if name.casefold() in reserved:
                    bundle.left_out.append(f"{name}: has the name of this bundle's own file")
                    continue
                if len(bundle.included) >= MAX_FILES:
                    bundle.left_out.append(f"{name}: the bundle holds at most {MAX_FILES} files")
                    continue
                try:
                    handle, size = files.open(name, MAX_BYTES - total)
                except FileTooLarge:
                    bundle.left_out.append(f"{name}: over the bundle's {MAX_BYTES >> 20} MB")
                    continue
                except OSError as exc:
                    why = "not a regular file" if isinstance(exc, PermissionError) else "no longer there"
                    bundle.left_out.append(f"{name}: {why}")
                    continue
                with handle:
                    total += _copy(handle, size, archive, name)
                bundle.included.append(name)
            if bundle.left_out:
                archive.writestr(NOTE_NAME, "Files not in this bundle:\n" + "\n".join(bundle.left_out) + "\n")
        os.replace(temporary, target)
    finally:
        if temporary.exists():
            temporary.unlink()
    return bundle


def _copy(handle: BinaryIO, size: int, archive: zipfile.ZipFile, name: str) -> int:
    """The file's first `size` bytes (its size when opened: one the code keeps growing is not followed) into the
    archive in chunks; the bytes copied."""
    copied = 0
    with archive.open(name, "w") as entry:
        while copied < size:
            chunk = handle.read(min(CHUNK_BYTES, size - copied))
            if not chunk:
                break
            entry.write(chunk)
            copied += len(chunk)
    return copied
