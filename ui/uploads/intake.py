"""Uploaded data files: safe names, limits, and the previews the agent (and the person) is shown.

Everything here is a pure function of its arguments (plus the file on disk), so it is unit-tested
without a server. A file that cannot be used never reaches the workspace: `ingest_upload` returns an
`UploadResult` whose `error` is a sentence meant for the chat. Reading a file's content is
ui/uploads/parsing.py's job, done in the preview child (ui/uploads/preview_worker.py); a picture's header alone
(format, size, pixels: never its image data) is read in the app, by ui/uploads/images.py.
"""
from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.errors import ImageRefusedError
from agents.injection import detect_injection, screen
from ui.session.workspace_access import DiskFiles, WorkspaceFiles
from ui.uploads.images import IMAGE_KIND, image_preview, is_image_name
from ui.uploads.parsing import (
    SUPPORTED_EXTENSIONS,
    UploadError,
    first_error_line,
    normalized_text_upload,
    parse_preview,
)
from ui.uploads.preview_worker import PreviewFailed, preview_service

DEFAULT_MAX_UPLOAD_BYTES = 50 * 1024 * 1024
MAX_NAME_LENGTH = 100
MAX_NAME_TRIES = 8  # names tried for one upload when each is found taken as it is written

_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


@dataclass
class UploadResult:
    original_name: str
    size_bytes: int
    safe_name: str | None = None
    path: Path | None = None
    kind: str | None = None
    preview: str = ""
    error: str | None = None
    stored_bytes: int = 0  # what the workspace copy takes: a text stored re-encoded as UTF-8 may be bigger

    @property
    def ok(self) -> bool:
        return self.error is None


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} bytes"


def safe_filename(name: str) -> str:
    """A file name that is safe to create in the workspace: no directories, no odd characters.

    `../../etc/passwd.csv` -> `passwd.csv`; `my data (1).CSV` -> `my_data_1.csv`.
    """
    base = re.split(r"[\\/]", str(name or ""))[-1]
    base = unicodedata.normalize("NFKD", base).encode("ascii", "ignore").decode("ascii")
    stem, ext = os.path.splitext(base)
    if not stem and ext:  # ".csv" alone, or a dot file such as ".bashrc"
        stem, ext = ext.lstrip("."), ""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", stem)
    stem = re.sub(r"_+", "_", stem).strip("._-")
    ext = re.sub(r"[^A-Za-z0-9.]+", "", ext).lower()
    if not stem or stem.lower() in _WINDOWS_RESERVED:
        stem = f"upload_{stem}" if stem else "upload"
    stem = stem[: MAX_NAME_LENGTH - len(ext)]
    return stem + ext


def unique_name(files: WorkspaceFiles | Path, name: str, avoid: Collection[str] = ()) -> str:
    """`name`, or `stem_2.ext`, `stem_3.ext`... if it is taken in the workspace `files` (by anything, a link too)
    or in `avoid` (names an exclusive write found taken: a host lists regular files only)."""
    if isinstance(files, Path):
        files = DiskFiles(files)
    if name not in avoid and not files.taken(name):
        return name
    stem, ext = os.path.splitext(name)
    index = 2
    while f"{stem}_{index}{ext}" in avoid or files.taken(f"{stem}_{index}{ext}"):
        index += 1
    return f"{stem}_{index}{ext}"


def preview_file(path: str | Path, original_name: str | None = None) -> tuple[str, str]:
    """Return (kind, preview text) for a supported file, or raise UploadError with the reason.

    The parsing happens in the preview child process (ui/uploads/preview_worker.py), under its memory and time
    limits; the app process never parses a visitor's file.
    """
    ext = os.path.splitext(original_name or Path(path).name)[1].lower()
    if ext not in SUPPORTED_EXTENSIONS:
        return parse_preview(Path(path), original_name)  # refused by name alone: no child needed
    try:
        return preview_service().preview(path, original_name or Path(path).name)
    except PreviewFailed as exc:
        raise UploadError(str(exc)) from None


def ingest_upload(
    source: str | Path,
    workspace: str | Path | WorkspaceFiles,
    original_name: str | None = None,
    max_bytes: int = DEFAULT_MAX_UPLOAD_BYTES,
    room: int | None = None,
) -> UploadResult:
    """Check one uploaded file (`source`: as Gradio received it, on the app's disk), preview it and copy it
    into the workspace (its `WorkspaceFiles`, or a folder of the app's with no sandbox) under a safe, unique
    name. `room`: what the workspace's quota has left, checked against what is stored (a text re-encoded as
    UTF-8 takes up to three times its upload); one that does not fit is refused (`error`), nothing written."""
    src = Path(source)
    name = original_name or src.name
    try:
        size = src.stat().st_size
    except OSError:
        return UploadResult(name, 0, error=f"`{name}` could not be read: the upload is missing on the server.")
    result = UploadResult(original_name=name, size_bytes=size)
    try:
        if size == 0:
            raise UploadError("is empty (0 bytes).")
        if size > max_bytes:
            raise UploadError(f"is too large: {human_size(size)}; the limit is {human_size(max_bytes)}.")
        if is_image_name(name):  # checked here, header only: never decoded by the app (ui/uploads/images.py)
            result.kind, result.preview = IMAGE_KIND, image_preview(src, max_bytes)
        else:
            result.kind, result.preview = preview_file(src, name)
    except (UploadError, ImageRefusedError) as exc:
        result.error = f"`{name}` {exc}"
        return result
    except Exception as exc:  # a reader failing in a way we did not foresee must not stop the run
        result.error = f"`{name}` could not be read: {first_error_line(exc)}"
        return result
    files = DiskFiles(workspace) if isinstance(workspace, (str, Path)) else workspace
    normalized = normalized_text_upload(src) if result.kind in ("csv", "tsv", "text", "json", "jsonl") else None
    stored = normalized.encode("utf-8") if normalized is not None else None
    result.stored_bytes = len(stored) if stored is not None else size
    if room is not None and result.stored_bytes > room:
        result.error = (f"`{name}` was not added: stored it takes {human_size(result.stored_bytes)}, more than the "
                        f"{human_size(max(0, room))} this chat's files have left. Start a new chat or delete files "
                        "from this one.")
        return result
    # The workspace is the worker's: a name in it may be a link its code left there (dangling, so the name looked
    # free). The copy is exclusive (WorkspaceFiles.write: made whole, then linked in where nothing has the name,
    # decided where the file is), never written through whatever is in its place; a name found taken so is
    # skipped for the next one.
    tried: list[str] = []
    for _ in range(MAX_NAME_TRIES):
        try:
            result.safe_name = unique_name(files, safe_filename(name), tried)
            if stored is not None:  # the agent's code then reads it as plain UTF-8, as the preview says
                files.write(result.safe_name, stored, max(max_bytes, len(stored)), exclusive=True)
            else:
                with open(src, "rb") as source_file:
                    files.write(result.safe_name, source_file, max_bytes, exclusive=True)
        except FileExistsError:
            tried.append(result.safe_name or "")
            continue
        except OSError as exc:
            result.error = f"`{name}` could not be added to the workspace: {exc.strerror or exc}."
            result.safe_name = None
            return result
        result.path = files.root / result.safe_name
        return result
    result.error = f"`{name}` could not be added to the workspace: every name tried was taken meanwhile."
    result.safe_name = None
    return result


def table_columns(preview: str) -> list[str]:
    """The column names a table preview lists (the lines `table_preview` writes: "- name: dtype, N missing"),
    those of the first table only; [] for a file that is not a table."""
    columns: list[str] = []
    lines = preview.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith("Columns (name: dtype, missing values):"))
    except StopIteration:
        return columns
    for line in lines[start + 1:]:
        if not line.startswith("- ") or line.startswith("- … and "):
            break
        name, sep, _ = line[2:].rpartition(": ")
        if not sep:
            break
        columns.append(name)
    return columns


def agent_task_text(user_text: str, results: list[UploadResult], templates: dict[str, Any] | None = None,
                    earlier: list[UploadResult] | None = None) -> str:
    """The task the agent receives: the person's message plus the paths, previews and columns of usable files,
    worded by the agent's prompt templates (`uploaded_files`; the full prompts' wording when none are given)."""
    from agents.prompts import load_prompt_templates
    from agents.prompts.profiles import describe_task

    good = [r for r in results if r.ok]
    bad = [r for r in results if not r.ok]
    files = []
    for r in good:  # the preview is the file's content: it reaches the model fenced as data, screened
        preview, _ = screen(r.preview, f"upload:{r.safe_name}")
        columns = table_columns(r.preview)
        if detect_injection(" ".join(columns)):  # names that read as instructions: only the fenced preview
            columns = []
        files.append({"name": r.safe_name, "size": human_size(r.size_bytes),
                      "preview": preview, "columns": columns})
    text = user_text.strip() or "Have a look at the attached file(s)."
    known: list[dict[str, Any]] = [{"name": r.safe_name, "columns": table_columns(r.preview)} for r in earlier or []]
    known = [f if not detect_injection(" ".join(f["columns"])) else {"name": f["name"]} for f in known]
    return describe_task(templates or load_prompt_templates("code_agent"), text, files,
                         [r.original_name for r in bad], known)
