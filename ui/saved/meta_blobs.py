"""A saved chat's list entry (meta.json) in the blob store: read (an unreadable one listed as damaged, so the chat
can still be opened), and changed by read-modify-write with a version check, again when another tab or replica
wrote first. Whoever can write the shared bucket decides a blob's size, so every read is bounded first.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from agents.memory.serialize import MAX_DOCUMENT_BYTES
from ui.saved.chat_meta import ChatMeta, clean_title, parse_meta
from ui.saved.data_folder import ChatStoreError
from ui.shared.blobs import ANY, MISSING, Blob, BlobStore, BlobTooLarge, Expect, LocalBlobs, VersionConflict

#: Read-modify-write of a chat's meta retried this often when another writer got there first.
META_RETRIES = 8
#: meta.json holds a title of 80 characters and a search text of 4,000 (`titles.SEARCH_CHARS`), at most 4 bytes
#: each in UTF-8 (6 for an escaped control character).
META_MAX_BYTES = 64 * 1024


def read(blobs: BlobStore, chat_key: str, chat_id: str) -> ChatMeta | None:
    """The chat's list entry; None when it has none (never used). An entry that is there but unreadable
    (a truncated meta.json) gives a `damaged` one, so the chat stays in the list and can be opened."""
    try:
        blob = blobs.get(f"{chat_key}/meta.json", max_bytes=META_MAX_BYTES)
    except BlobTooLarge:
        return damaged(blobs, chat_key, chat_id)
    if blob is None:
        return None
    return parse_meta(blob.data, chat_id) or damaged(blobs, chat_key, chat_id)


def damaged(blobs: BlobStore, chat_key: str, chat_id: str) -> ChatMeta:
    """Stand-in entry for an unreadable meta.json: the title from the first message in the memory (read
    unverified, only for the label; the chat is verified when opened), the time from the file's date."""
    title = "Untitled chat"
    try:
        memory = blobs.get(f"{chat_key}/memory.json", max_bytes=MAX_DOCUMENT_BYTES)
    except BlobTooLarge:
        memory = None  # refused when the chat is opened, with the reason
    try:
        turns = json.loads(memory.data.decode("utf-8"))["document"]["metadata"]["turns"] if memory else []
        title = clean_title(str(turns[0].get("text") or "")) or title
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        pass
    updated = 0.0
    if isinstance(blobs, LocalBlobs):
        try:
            updated = blobs.path(f"{chat_key}/meta.json").stat().st_mtime
        except OSError:
            pass
    return ChatMeta(id=chat_id, title=title, created=updated, updated=updated, damaged=True)


def update(blobs: BlobStore, chat_key: str, chat_id: str,
           change: Callable[[ChatMeta | None], ChatMeta]) -> ChatMeta:
    """Read, change and write the chat's meta with a version check, again if another writer came first."""
    key = f"{chat_key}/meta.json"
    for _ in range(META_RETRIES):
        blob: Blob | None
        try:
            blob = blobs.get(key, max_bytes=META_MAX_BYTES)
            old = None if blob is None else parse_meta(blob.data, chat_id) or damaged(blobs, chat_key, chat_id)
            expect: Expect = MISSING if blob is None else blob.version
        except BlobTooLarge:  # not an entry this store wrote: rewritten whole, as a damaged one is
            blob, old, expect = None, damaged(blobs, chat_key, chat_id), ANY
        meta = change(old)  # a damaged entry is rewritten whole, keeping the title the list showed
        data = {"id": chat_id, "title": meta.title, "created": meta.created, "updated": meta.updated,
                "steps": meta.steps, "text": meta.text, "title_by": meta.title_by}
        try:
            blobs.put(key, json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8"), expect=expect)
            return meta
        except VersionConflict:
            continue
    raise ChatStoreError("This chat's entry could not be saved: other tabs or servers kept changing it. Try again.")
