"""PDF uploads: page count and the start of the text for the preview, and how the agent reads the rest.

Runs in the preview child (ui/uploads/preview_worker.py), like the other readers: a PDF is hostile input, and pypdf
parses it under the child's memory and time limits. Only the first pages are read for the preview; the
agent reads the whole text in its own code with pypdf (an authorized import, ui/settings.py).
"""
from __future__ import annotations

from pathlib import Path

#: The preview reads at most this many pages, and stops once it has this much text.
PREVIEW_PAGES = 20
PREVIEW_TEXT_CHARS = 1500

HOW_TO_READ = ("Read it in code with pypdf: `from pypdf import PdfReader; reader = PdfReader(path)`; "
               "`reader.pages[i].extract_text()` is the text of page i (from 0), "
               "`'\\n'.join(page.extract_text() for page in reader.pages)` all of it.")


class PdfUnreadable(ValueError):
    """The PDF cannot be previewed (damaged, password-protected); the message is shown to the person."""


def preview_pdf(path: Path) -> str:
    """The preview of a PDF: pages, how much text the first pages hold, how to read it, the start of the text."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted and not reader.decrypt(""):
            raise PdfUnreadable("is password-protected: upload a copy without a password.")
        pages = len(reader.pages)
        texts: list[str] = []
        for page in reader.pages[:PREVIEW_PAGES]:
            texts.append((page.extract_text() or "").strip())
            if sum(len(t) for t in texts) >= PREVIEW_TEXT_CHARS:
                break
    except PdfUnreadable:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise PdfUnreadable(f"could not be read as a PDF (the file may be damaged): {why}") from None
    if pages == 0:
        raise PdfUnreadable("is a PDF without pages.")
    with_text = sum(1 for t in texts if t)
    head = f"PDF document: {pages} page{'s' if pages != 1 else ''}"
    if with_text == 0:
        return (head + f". No text found in the first {len(texts)} page(s): it may be scanned images without a text "
                "layer, which cannot be read as text.\n" + HOW_TO_READ)
    text = "\n\n".join(t for t in texts if t)
    if len(text) > PREVIEW_TEXT_CHARS:
        text = text[:PREVIEW_TEXT_CHARS].rstrip() + " …"
    return (head + f", text on {with_text} of the first {len(texts)} read for this preview.\n" + HOW_TO_READ
            + "\nStart of the text:\n" + text)
