"""Which backends the settings name: AGENTDECK_CHAT_STORE for saved chats' blobs, AGENTDECK_REDIS_URL for the
shared state. Kept apart from the protocols so the implementations import those without a circle."""
from __future__ import annotations

from pathlib import Path

from ui.shared.blobs import BlobStore, LocalBlobs
from ui.shared.state import MemoryState, SharedState


def open_blob_store(url: str, data_dir: str | Path) -> BlobStore:
    """The store `AGENTDECK_CHAT_STORE` names: empty for the data folder (the default), `s3://bucket/prefix` for
    S3 or an S3-compatible server (its address from the standard `AWS_ENDPOINT_URL`), any other fsspec URL
    (`hf://buckets/...`, `memory://`) through fsspec."""
    url = (url or "").strip()
    if not url:
        return LocalBlobs(data_dir)
    if url.startswith("s3://"):
        from ui.shared.blobs_s3 import S3Blobs

        return S3Blobs(url)
    if url.startswith("file://") or "://" not in url:
        return LocalBlobs(url.removeprefix("file://"))
    from ui.shared.blobs_fsspec import FsspecBlobs

    return FsspecBlobs(url)


def open_shared_state(url: str | None = None) -> SharedState:
    """Redis at `url` (default `AGENTDECK_REDIS_URL`), else a new in-memory state for this process."""
    if url is None:
        from ui.config.current import current_settings

        url = current_settings().redis_url
    url = url.strip()
    if not url:
        return MemoryState()
    from ui.shared.state_redis import RedisState

    return RedisState(url)
