"""Where saved chats' small files live: a store of named blobs with versions, so replicas cannot lose updates.

Why: with one process the chat folder on local disk was enough; app replicas behind a load balancer need one
store all of them read and write (object storage), and two of them writing one chat at once must not silently
drop one of the writes. Every `put` may name the version it last saw (`expect`): the write happens only if the
blob is still at that version (`MISSING`: only if there is none yet), otherwise `VersionConflict` is raised and
nothing is written. `ANY` writes unconditionally (today's behaviour where no version was read).

Keys are relative POSIX paths (`owners/<owner>/<chat>/meta.json`); the local implementation maps them to files
under a folder with atomic renames (agents/memory/atomic.py), so the default layout on disk is unchanged.
A version is opaque: the local store's is a hash of the content, S3's its ETag.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

from agents.executor.tree_walk import remove_tree
from agents.memory.atomic import atomic_write_bytes


class BlobStoreError(Exception):
    """The chat store cannot be reached or used; the message names the store and what to check."""


class VersionConflict(BlobStoreError):
    """The blob changed since the writer read it (another tab or replica wrote it): nothing was written."""


class BlobTooLarge(BlobStoreError):
    """The blob is larger than the reader's bound (`get(..., max_bytes=)`): nothing past the bound was read."""


class _Any:
    def __repr__(self) -> str:
        return "ANY"


ANY: Final = _Any()  # `expect`: write whatever version is there
MISSING: Final = None  # `expect`: write only if the blob does not exist yet
Expect = str | _Any | None

_KEY = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")


@dataclass(frozen=True)
class Blob:
    data: bytes
    version: str


class BlobStore(Protocol):
    """The chat store's backend (ui/saved/store.py). `url` says where it is, for messages and the README."""

    url: str

    def get(self, key: str, max_bytes: int | None = None) -> Blob | None:
        """The blob, or None if there is none. `max_bytes`: BlobTooLarge for a larger blob, found without reading
        more than the bound (whoever can write the bucket decides a blob's size)."""
        ...

    def put(self, key: str, data: bytes, expect: Expect = ANY) -> str:
        """Write `data`, returning its new version; VersionConflict (nothing written) if `expect` does not hold."""
        ...

    def delete(self, key: str) -> None: ...

    def delete_tree(self, prefix: str) -> None:
        """Every blob under `prefix/`."""
        ...

    def children(self, prefix: str) -> list[str]:
        """The names directly under `prefix/` (blobs and "folders"), like one directory listing."""
        ...


def check_key(key: str) -> str:
    """A key is a relative path of plain names: never `..`, an absolute path or an empty part."""
    if not isinstance(key, str) or not _KEY.match(key) or any(part in (".", "..") for part in key.split("/")):
        raise BlobStoreError(f"Not a valid blob key: {key!r}.")
    return key


def bounded(key: str, data: bytes, max_bytes: int | None) -> bytes:
    """`data`, or BlobTooLarge if it is over `max_bytes` (a blob that grew between its size and its read)."""
    if max_bytes is not None and len(data) > max_bytes:
        raise BlobTooLarge(f"{key} is over the bound of {max_bytes:,} bytes")
    return data


def content_version(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


class LocalBlobs:
    """Blobs as files under one folder (today's layout). Writes are atomic renames under a lock held across
    processes, and the version check happens under that lock, so two processes on one machine cannot tear a file
    or lose an update either."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.url = str(self.root)

    def path(self, key: str) -> Path:
        return self.root / check_key(key)

    def get(self, key: str, max_bytes: int | None = None) -> Blob | None:
        try:
            with self.path(key).open("rb") as handle:
                if max_bytes is not None and os.fstat(handle.fileno()).st_size > max_bytes:
                    raise BlobTooLarge(f"{key} is over the bound of {max_bytes:,} bytes")
                data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        return Blob(bounded(key, data, max_bytes), content_version(data))

    def put(self, key: str, data: bytes, expect: Expect = ANY) -> str:
        def check(current: bytes | None) -> None:
            if isinstance(expect, _Any):
                return
            found = None if current is None else content_version(current)
            if found != expect:
                raise VersionConflict(f"{key} changed since it was read (another tab or server saved it).")

        atomic_write_bytes(self.path(key), data, check=check)
        return content_version(data)

    def delete(self, key: str) -> None:
        try:
            os.unlink(self.path(key))
        except FileNotFoundError:
            pass

    def delete_tree(self, prefix: str) -> None:
        remove_tree(str(self.path(prefix)))  # any depth: a workspace may hold a tree too deep for shutil.rmtree

    def children(self, prefix: str) -> list[str]:
        try:
            return sorted(p.name for p in self.path(prefix).iterdir() if not p.name.startswith("."))
        except (FileNotFoundError, NotADirectoryError):
            return []
