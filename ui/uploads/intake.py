"""Uploaded data files: safe names, limits, and the previews the agent (and the person) is shown.

Everything here is a pure function of its arguments (plus the file on disk), so it is unit-tested
without a server. A file that cannot be used never reaches the workspace: `ingest_upload` returns an
`UploadResult` whose `error` is a sentence meant for the chat.
"""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.guard import detect_injection, screen
from ui.uploads.pdf_preview import PdfUnreadable, preview_pdf

DEFAULT_MAX_UPLOAD_BYTES = 50 * 1024 * 1024
MAX_PREVIEW_CHARS = 2500
TEXT_PREVIEW_CHARS = 1500
PREVIEW_ROWS = 5
MAX_NAME_LENGTH = 100

# extension -> reader kind
SUPPORTED_EXTENSIONS: dict[str, str] = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".xlsx": "excel",
    ".xls": "excel",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".txt": "text",
    ".md": "text",
    ".markdown": "text",
    ".html": "text",
    ".htm": "text",
    ".pdf": "pdf",
}

_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


class UploadError(Exception):
    """A file cannot be used; the message is shown to the person as is."""


@dataclass
class UploadResult:
    original_name: str
    size_bytes: int
    safe_name: str | None = None
    path: Path | None = None
    kind: str | None = None
    preview: str = ""
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def max_upload_bytes_from_env() -> int:
    raw = os.environ.get("AGENTDECK_MAX_UPLOAD_MB", "").strip()
    try:
        return int(float(raw) * 1024 * 1024) if raw else DEFAULT_MAX_UPLOAD_BYTES
    except ValueError:
        return DEFAULT_MAX_UPLOAD_BYTES


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


def unique_name(directory: Path, name: str) -> str:
    """`name`, or `stem_2.ext`, `stem_3.ext`... if it is taken in `directory`."""
    if not (directory / name).exists():
        return name
    stem, ext = os.path.splitext(name)
    index = 2
    while (directory / f"{stem}_{index}{ext}").exists():
        index += 1
    return f"{stem}_{index}{ext}"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 20].rstrip() + "\n… (preview cut)"


MIXED = "mixed"  # the encoding label of a file whose lines are in different encodings (stored as UTF-8)


def _decode(data: bytes, what: str) -> tuple[str, str]:
    """(text, encoding): UTF-8 when it is; a file mixing UTF-8 lines with lines in a legacy encoding is
    decoded line by line ("mixed"); otherwise the encoding charset-normalizer finds most likely."""
    if b"\x00" in data[:8192]:
        raise UploadError(f"does not look like a {what}: it contains binary data.")
    try:
        return data.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:
        pass
    legacy = _legacy_encoding(data)
    lines = data.splitlines(keepends=True)
    utf8_non_ascii = 0
    for line in lines:
        if not line.isascii():
            try:
                line.decode("utf-8")
                utf8_non_ascii += 1
            except UnicodeDecodeError:
                continue
    if utf8_non_ascii:
        return "".join(_decode_line(line, legacy) for line in lines), MIXED
    return data.decode(legacy, errors="replace"), legacy


def _legacy_encoding(data: bytes) -> str:
    """Windows-1252 when the bytes are valid in it and the detector does not see another script (Cyrillic,
    Greek, CJK...): on short Western texts detectors confuse the Latin code pages."""
    detected = None
    try:
        from charset_normalizer import from_bytes

        best = from_bytes(data[:200_000]).best()
        detected = str(best.encoding) if best is not None and best.encoding else None
    except Exception:
        pass
    latin = {"cp1252", "cp1250", "cp1257", "latin_1", "iso8859_1", "iso8859_15", "iso8859_2", "mac_roman", "ascii"}
    try:
        data.decode("cp1252")
        if detected is None or detected.replace("-", "_").lower() in latin:
            return "cp1252"
    except UnicodeDecodeError:
        pass
    return detected or "latin-1"


def _decode_line(line: bytes, legacy: str) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return line.decode(legacy, errors="replace")


def normalized_text_upload(path: Path) -> str | None:
    """The UTF-8 text to store instead of a text upload that mixes encodings (None: store it as it is)."""
    data = path.read_bytes()
    try:
        text, encoding = _decode(data, "text file")
    except UploadError:
        return None
    return text if encoding == MIXED else None


def sniff_delimiter(text: str, default: str) -> str:
    """The delimiter a delimited file really uses (`;` in much of Europe), from its first lines."""
    import csv

    sample = "\n".join(text.splitlines()[:50])
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        return default


def table_preview(df: Any, rows: int = PREVIEW_ROWS) -> str:
    """Shape, column names and types, missing values and the first rows of a DataFrame."""
    import pandas as pd

    lines = [f"Shape: {df.shape[0]} rows × {df.shape[1]} columns", "Columns (name: dtype, missing values):"]
    missing = df.isna().sum()
    for column in list(df.columns)[:60]:
        lines.append(f"- {column}: {df[column].dtype}, {int(missing[column])} missing")
    if df.shape[1] > 60:
        lines.append(f"- … and {df.shape[1] - 60} more columns")
    if len(df):
        with pd.option_context("display.width", 160, "display.max_columns", 20, "display.max_colwidth", 30):
            lines.append(f"First {min(rows, len(df))} rows:")
            lines.append(df.head(rows).to_string())
    else:
        lines.append("The table has no rows.")
    return "\n".join(lines)


def first_error_line(exc: BaseException) -> str:
    return _first_error_line(exc)


def _first_error_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]


def _preview_delimited(path: Path, sep: str, label: str) -> str:
    import pandas as pd

    text, encoding = _decode(path.read_bytes(), f"{label} file")
    if not text.strip():
        raise UploadError("is empty: there is no data in it.")
    sep = sniff_delimiter(text, sep)
    try:
        df = pd.read_csv(io.StringIO(text), sep=sep)
    except pd.errors.EmptyDataError:
        raise UploadError("is empty: there is no data in it.") from None
    except (pd.errors.ParserError, ValueError) as exc:
        raise UploadError(f"could not be read as {label}: {_first_error_line(exc)}") from None
    hint = "pd.read_csv(path" + {",": "", "\t": ", sep='\\t'"}.get(sep, f", sep={sep!r}")
    hint += f", encoding='{encoding}')" if encoding not in ("utf-8", MIXED) else ")"
    shown = "UTF-8 lines mixed with another encoding, stored as UTF-8" if encoding == MIXED else encoding
    delimiter = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}.get(sep, repr(sep))
    return (f"{label} table (encoding {shown}; {delimiter}-separated; read it with {hint})\n"
            + table_preview(df))


def _preview_excel(path: Path) -> str:
    import pandas as pd

    try:
        sheets = pd.read_excel(path, sheet_name=None)
    except ImportError as exc:
        raise UploadError(f"could not be read: the Excel reader is not installed ({_first_error_line(exc)}).") from None
    except Exception as exc:  # zipfile.BadZipFile, xlrd errors, ValueError...
        raise UploadError(f"could not be read as an Excel workbook (the file may be corrupt): {_first_error_line(exc)}") from None
    if not sheets:
        raise UploadError("is an Excel workbook without sheets.")
    parts = [f"Excel workbook with {len(sheets)} sheet(s): {', '.join(map(str, sheets))} "
             "(read it with pd.read_excel(path, sheet_name=...))"]
    for name, df in list(sheets.items())[:3]:
        parts.append(f"Sheet '{name}':\n" + table_preview(df))
    if len(sheets) > 3:
        parts.append(f"… and {len(sheets) - 3} more sheets")
    return "\n\n".join(parts)


def _preview_json(path: Path, lines: bool) -> str:
    import pandas as pd

    text, _ = _decode(path.read_bytes(), "JSON file")
    if not text.strip():
        raise UploadError("is empty: there is no data in it.")
    if lines:
        try:
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise UploadError(f"is not valid JSON Lines: {exc.msg} (line {exc.lineno}).") from None
        data: Any = records
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UploadError(f"is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.") from None
    if isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        df = pd.json_normalize(data)
        reader = "pd.read_json(path, lines=True)" if lines else "pd.read_json(path) or json.load"
        return f"JSON records (read it with {reader})\n" + table_preview(df)
    if isinstance(data, dict):
        keys = ", ".join(f"{k} ({type(v).__name__})" for k, v in list(data.items())[:30])
        head = f"JSON object with {len(data)} keys: {keys}"
    elif isinstance(data, list):
        head = f"JSON array with {len(data)} items"
    else:
        head = f"JSON value of type {type(data).__name__}"
    return head + "\nStart of the file:\n" + _clip(text, TEXT_PREVIEW_CHARS)


def _preview_parquet(path: Path) -> str:
    import pandas as pd

    try:
        df = pd.read_parquet(path)
    except ImportError as exc:
        raise UploadError(f"could not be read: the Parquet reader is not installed ({_first_error_line(exc)}).") from None
    except Exception as exc:
        if type(exc).__name__ == "ArrowMemoryError" or "malloc" in str(exc):
            raise MemoryError(str(exc)) from None  # a table too big for the preview's memory limit
        raise UploadError(f"could not be read as a Parquet file (the file may be corrupt): {_first_error_line(exc)}") from None
    return "Parquet table (read it with pd.read_parquet(path))\n" + table_preview(df)


def _preview_text(path: Path, ext: str) -> str:
    text, encoding = _decode(path.read_bytes(), "text file")
    if not text.strip():
        raise UploadError("is empty: there is no text in it.")
    label = {".md": "Markdown", ".markdown": "Markdown", ".html": "HTML", ".htm": "HTML"}.get(ext, "Text")
    count = text.count("\n") + (0 if text.endswith("\n") else 1)
    head = f"{label} file: {count} lines, {len(text)} characters, encoding {encoding}"
    if encoding != "utf-8":
        head += f" (open it with encoding='{encoding}')"
    return head + "\nStart of the file:\n" + _clip(text, TEXT_PREVIEW_CHARS)


def preview_file(path: str | Path, original_name: str | None = None) -> tuple[str, str]:
    """Return (kind, preview text) for a supported file, or raise UploadError with the reason.

    The parsing happens in the preview child process (ui/uploads/preview_worker.py), under its memory and time
    limits; the app process never parses a visitor's file.
    """
    from ui.uploads.preview_worker import PreviewFailed, preview_service

    ext = os.path.splitext(original_name or Path(path).name)[1].lower()
    if ext not in SUPPORTED_EXTENSIONS:
        return parse_preview(Path(path), original_name)  # refused by name alone: no child needed
    try:
        return preview_service().preview(path, original_name or Path(path).name)
    except PreviewFailed as exc:
        raise UploadError(str(exc)) from None


def parse_preview(path: str | Path, original_name: str | None = None) -> tuple[str, str]:
    """The parsing itself (run in the preview child): (kind, preview text), or UploadError."""
    file_path = Path(path)
    ext = os.path.splitext(original_name or file_path.name)[1].lower()
    kind = SUPPORTED_EXTENSIONS.get(ext)
    if kind is None:
        shown = ext or "(no extension)"
        raise UploadError(
            f"has an unsupported type {shown}. Supported: {', '.join(sorted(SUPPORTED_EXTENSIONS))}."
        )
    if kind == "csv":
        preview = _preview_delimited(file_path, ",", "CSV")
    elif kind == "tsv":
        preview = _preview_delimited(file_path, "\t", "TSV")
    elif kind == "excel":
        preview = _preview_excel(file_path)
    elif kind in ("json", "jsonl"):
        preview = _preview_json(file_path, lines=kind == "jsonl")
    elif kind == "parquet":
        preview = _preview_parquet(file_path)
    elif kind == "pdf":
        try:
            preview = preview_pdf(file_path)
        except PdfUnreadable as exc:
            raise UploadError(str(exc)) from None
    else:
        preview = _preview_text(file_path, ext)
    return kind, _clip(preview, MAX_PREVIEW_CHARS)


def ingest_upload(
    source: str | Path,
    workspace: str | Path,
    original_name: str | None = None,
    max_bytes: int = DEFAULT_MAX_UPLOAD_BYTES,
) -> UploadResult:
    """Check one uploaded file, preview it and copy it into `workspace` under a safe, unique name."""
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
        result.kind, result.preview = preview_file(src, name)
    except UploadError as exc:
        result.error = f"`{name}` {exc}"
        return result
    except Exception as exc:  # a reader failing in a way we did not foresee must not stop the run
        result.error = f"`{name}` could not be read: {_first_error_line(exc)}"
        return result
    target_dir = Path(workspace)
    target_dir.mkdir(parents=True, exist_ok=True)
    result.safe_name = unique_name(target_dir, safe_filename(name))
    result.path = target_dir / result.safe_name
    normalized = normalized_text_upload(src) if result.kind in ("csv", "tsv", "text", "json", "jsonl") else None
    if normalized is not None:  # the agent's code then reads it as plain UTF-8, as the preview says
        result.path.write_text(normalized, encoding="utf-8")
    else:
        shutil.copyfile(src, result.path)
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
    known = [{"name": r.safe_name, "columns": table_columns(r.preview)} for r in earlier or []]
    known = [f if not detect_injection(" ".join(f["columns"])) else {"name": f["name"]} for f in known]
    return describe_task(templates or load_prompt_templates("code_agent"), text, files,
                         [r.original_name for r in bad], known)
