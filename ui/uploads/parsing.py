"""Reading an uploaded file's content into the preview the agent and the person are shown: decoding (encoding
detection, files mixing encodings), delimiter sniffing and one reader per format.

Runs in the preview child (ui/uploads/preview_worker.py), never in the app process: a visitor's file is hostile
input to pandas and its readers. Everything here is a pure function of its arguments plus the file on disk.
"""
from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path
from typing import Any

from ui.uploads.pdf_preview import PdfUnreadable, preview_pdf

MAX_PREVIEW_CHARS = 2500
TEXT_PREVIEW_CHARS = 1500
PREVIEW_ROWS = 5

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

class UploadError(Exception):
    """A file cannot be used; the message is shown to the person as is."""


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
    """Windows-1252 when the bytes read as plausible Western text in it, or when they are valid in it and the
    detector does not see another script (Cyrillic, Greek, CJK...): on short Western texts detectors confuse the
    Latin code pages (a few "José,München" rows came back as mac_latin2, "Josť,MŁnchen")."""
    try:
        western = data.decode("cp1252")
    except UnicodeDecodeError:
        western = None
    if western is not None and plausible_western(western[:200_000]):
        return "cp1252"
    detected = None
    try:
        from charset_normalizer import from_bytes

        best = from_bytes(data[:200_000]).best()
        detected = str(best.encoding) if best is not None and best.encoding else None
    except Exception:
        pass
    latin = {"cp1252", "cp1250", "cp1257", "latin_1", "iso8859_1", "iso8859_15", "iso8859_2", "mac_roman", "ascii"}
    if western is not None and (detected is None or detected.replace("-", "_").lower() in latin):
        return "cp1252"
    return detected or "latin-1"


#: Letters of Western European languages outside ASCII that Windows-1252 has (Latin-1's letters, Œ œ Š š Ž ž).
_WESTERN_LETTERS = frozenset(chr(c) for c in range(0xC0, 0x100) if c not in (0xD7, 0xF7)) | frozenset("ŒœŠšŽž")
#: Signs and punctuation Western text uses; only those of `_INSIDE_WORDS` come between two letters ("don’t").
_WESTERN_SIGNS = frozenset("€£¥¢°§©®™’‘“”„–—…«»¿¡·µ½¼¾²³ªº´¨¸\u00a0•†‰")
_INSIDE_WORDS = frozenset("’‘·–´")
_NON_ASCII_WORD = re.compile(r"[^\W\d_]{3,}")


def plausible_western(text: str) -> bool:
    """Whether text decoded as Windows-1252 reads as a Western European language: every character outside
    ASCII is one of its letters or signs, a sign never sits inside a word, and at least half the words holding
    such letters also hold ASCII ones ("München", "José"). Another script read as Windows-1252 ("Ïðèâåò" for
    Cyrillic) fails the last test: its words are all high bytes."""
    if text.isascii():
        return True
    for index, char in enumerate(text):
        if char.isascii() or char in _WESTERN_LETTERS:
            continue
        if char not in _WESTERN_SIGNS:
            return False
        if (char not in _INSIDE_WORDS and 0 < index < len(text) - 1 and text[index - 1].isalpha()
                and text[index + 1].isalpha()):
            return False
    words = [word for word in _NON_ASCII_WORD.findall(text) if not word.isascii()]
    all_high = sum(1 for word in words if not any(ch.isascii() for ch in word))
    return 2 * all_high <= len(words)


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
        raise UploadError(f"could not be read as {label}: {first_error_line(exc)}") from None
    hint = "pd.read_csv(path" + {",": "", "\t": ", sep='\\t'"}.get(sep, f", sep={sep!r}")
    if sep != "," and _decimal_commas(df):
        hint += ", decimal=','"
        try:
            df = pd.read_csv(io.StringIO(text), sep=sep, decimal=",")
        except (pd.errors.ParserError, ValueError):
            pass
    hint += f", encoding='{encoding}')" if encoding not in ("utf-8", MIXED) else ")"
    shown = "UTF-8 lines mixed with another encoding, stored as UTF-8" if encoding == MIXED else encoding
    delimiter = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}.get(sep, repr(sep))
    return (f"{label} table (encoding {shown}; {delimiter}-separated; read it with {hint})\n"
            + table_preview(df))


_DECIMAL_COMMA = re.compile(r"^[-+]?\d+,\d+$")


def _decimal_commas(df: Any) -> bool:
    """Whether some text column holds only numbers written with a decimal comma ("83,2"), as European
    spreadsheets export them beside a `;` separator: pandas reads those as text unless told `decimal=','`."""
    from pandas.api.types import is_numeric_dtype

    for column in list(df.columns)[:200]:
        if is_numeric_dtype(df[column].dtype):
            continue
        values = [str(v).strip() for v in df[column].dropna().head(200)]
        if values and all(_DECIMAL_COMMA.match(v) for v in values):
            return True
    return False


def _preview_excel(path: Path) -> str:
    import pandas as pd

    try:
        sheets = pd.read_excel(path, sheet_name=None)
    except ImportError as exc:
        raise UploadError(f"could not be read: the Excel reader is not installed ({first_error_line(exc)}).") from None
    except Exception as exc:  # zipfile.BadZipFile, xlrd errors, ValueError...
        raise UploadError("could not be read as an Excel workbook (the file may be corrupt): "
                          f"{first_error_line(exc)}") from None
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
        raise UploadError("could not be read: the Parquet reader is not installed "
                          f"({first_error_line(exc)}).") from None
    except Exception as exc:
        if type(exc).__name__ == "ArrowMemoryError" or "malloc" in str(exc):
            raise MemoryError(str(exc)) from None  # a table too big for the preview's memory limit
        raise UploadError("could not be read as a Parquet file (the file may be corrupt): "
                          f"{first_error_line(exc)}") from None
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
