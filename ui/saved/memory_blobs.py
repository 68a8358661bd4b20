"""A saved chat's memory (memory.json) in the blob store: written signed over the version last seen (a concurrent
save elsewhere is refused, its update stands), read bounded and verified, every failure a ChatStoreError whose
sentence says what happened and what to do. Whoever can write the shared bucket decides a blob's bytes, so nothing
of a refused file is used.
"""
from __future__ import annotations

import json
from typing import Any

from agents.errors import MemoryFileError, MemoryIntegrityError, MemorySchemaError, MemoryTooLargeError
from agents.memory.memory import AgentMemory
from agents.memory.serialize import MAX_DOCUMENT_BYTES, dumps_memory, loads_memory
from ui.saved.data_folder import ChatStoreError
from ui.saved.key_change import SECRET_CHANGED, SECRET_ID_KEY, unverified_secret_id
from ui.shared.blobs import MISSING, BlobStore, BlobStoreError, BlobTooLarge, Expect, VersionConflict


def write(blobs: BlobStore, name: str, memory: AgentMemory, key: bytes, secret_id: str, metadata: dict[str, Any],
          expect: Expect) -> Expect:
    """Sign `memory` with `key` (and which secret signed it) and write it over the version `expect`; returns the
    new version."""
    metadata = {**metadata, SECRET_ID_KEY: secret_id}  # which secret signed it (key_change.py)
    data = dumps_memory(memory, key, metadata=metadata)
    try:
        return blobs.put(name, data, expect=expect)
    except VersionConflict:
        raise ChatStoreError("This chat was saved meanwhile from another tab or server, so this tab's version "
                             "was not saved over it. Reopen the chat to continue from what was saved.") from None
    except BlobStoreError as exc:
        raise ChatStoreError(f"This chat could not be saved: {exc}") from None


def read(blobs: BlobStore, name: str, key: bytes, secret_id: str) -> tuple[AgentMemory | None, dict[str, Any], Expect]:
    """(memory, signed metadata, version read); (None, {}, MISSING) when none was saved yet."""
    try:
        blob = blobs.get(name, max_bytes=MAX_DOCUMENT_BYTES)
    except BlobTooLarge:
        raise ChatStoreError(f"This saved chat was refused: its memory is over the limit of "
                             f"{MAX_DOCUMENT_BYTES:,} bytes (it was not written by this app; nothing of it "
                             "was used).") from None
    except BlobStoreError as exc:
        raise ChatStoreError(f"This saved chat could not be read: {exc}") from None
    if blob is None:
        return None, {}, MISSING
    try:
        data = blob.data
        if len(data) > MAX_DOCUMENT_BYTES:
            raise MemoryTooLargeError(f"The saved memory is {len(data):,} bytes; the limit is "
                                      f"{MAX_DOCUMENT_BYTES:,}.")
        memory = loads_memory(data, key)
        metadata = json.loads(data.decode("utf-8"))["document"].get("metadata") or {}
    except MemoryIntegrityError:
        signed_with = unverified_secret_id(blob.data)
        if signed_with is not None and signed_with != secret_id:
            raise ChatStoreError(SECRET_CHANGED) from None
        raise ChatStoreError("This saved chat was refused: its signature does not match this chat and owner "
                             "(the file was changed, or copied from another chat or owner)"
                             + (". If every saved chat is refused, the server's signing secret changed: "
                                "restore the previous AGENTDECK_SECRET or `secret` file and restart."
                                if signed_with is None else ".")) from None
    except MemorySchemaError as exc:
        raise ChatStoreError(f"This saved chat was refused: {exc}") from None
    except MemoryFileError as exc:
        raise ChatStoreError(f"This saved chat could not be read: {exc}") from None
    except OSError as exc:
        raise ChatStoreError(f"This saved chat could not be read: {exc.strerror or exc}.") from None
    if not isinstance(metadata, dict):
        return memory, {}, blob.version
    return memory, {k: v for k, v in metadata.items() if k != SECRET_ID_KEY}, blob.version
