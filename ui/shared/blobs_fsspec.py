"""Saved chats' blobs on any fsspec file system (`hf://buckets/...` through huggingface_hub, `memory://`, ...).

Honest limit: fsspec has no conditional write, so the version check here is compare-then-write: a thread lock
makes it atomic within one process, but two replicas writing the same blob in the same instant can still lose
one write. Use `s3://` (ui/shared/blobs_s3.py, whose check the server makes) for several replicas; this backend
suits one replica that keeps its chats in a bucket.
"""
from __future__ import annotations

import threading
from typing import Any

from ui.shared.blobs import (
    ANY,
    Blob,
    BlobStoreError,
    BlobTooLarge,
    Expect,
    VersionConflict,
    _Any,
    bounded,
    check_key,
    content_version,
)


class FsspecBlobs:
    def __init__(self, url: str) -> None:
        try:
            import fsspec  # type: ignore[import-untyped]

            self.fs: Any
            self.fs, root = fsspec.core.url_to_fs(url)
        except (ImportError, ValueError) as exc:
            raise BlobStoreError(f"AGENTDECK_CHAT_STORE={url!r} is not a usable fsspec URL: {exc}.") from None
        self.url = url
        self.root = str(root).rstrip("/")
        self._lock = threading.Lock()

    def _path(self, key: str) -> str:
        return f"{self.root}/{check_key(key)}"

    def get(self, key: str, max_bytes: int | None = None) -> Blob | None:
        path = self._path(key)
        try:
            if max_bytes is None:
                data = bytes(self.fs.cat_file(path))
            else:
                if int(self.fs.size(path) or 0) > max_bytes:
                    raise BlobTooLarge(f"{key} is over the bound of {max_bytes:,} bytes")
                data = bytes(self.fs.cat_file(path, start=0, end=max_bytes + 1))
        except FileNotFoundError:
            return None
        return Blob(bounded(key, data, max_bytes), content_version(data))

    def put(self, key: str, data: bytes, expect: Expect = ANY) -> str:
        with self._lock:
            if not isinstance(expect, _Any):
                current = self.get(key)
                if (None if current is None else current.version) != expect:
                    raise VersionConflict(f"{key} changed since it was read (another tab or server saved it).")
            self.fs.pipe_file(self._path(key), data)
        return content_version(data)

    def delete(self, key: str) -> None:
        try:
            self.fs.rm_file(self._path(key))
        except FileNotFoundError:
            pass

    def delete_tree(self, prefix: str) -> None:
        try:
            self.fs.rm(self._path(prefix), recursive=True)
        except FileNotFoundError:
            pass

    def children(self, prefix: str) -> list[str]:
        try:
            entries = self.fs.ls(self._path(prefix), detail=False)
        except FileNotFoundError:
            return []
        return sorted({str(e).rstrip("/").rsplit("/", 1)[-1] for e in entries})
