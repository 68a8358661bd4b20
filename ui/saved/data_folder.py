"""Where the app keeps its data and the key that signs saved chats: the data folder (a Space's /data volume when
mounted), and the signing secret (AGENTDECK_SECRET, else a file in the data folder, else with a shared chat store
one blob every replica reads). Split out of store.py, which keeps the chats themselves."""
from __future__ import annotations

import os
import secrets
from pathlib import Path

from agents.memory.serialize import load_or_create_secret
from ui.shared.blobs import MISSING, BlobStore, BlobTooLarge, LocalBlobs, VersionConflict

SECRET_FILE_NAME = "secret"
SECRET_MAX_BYTES = 4096  # the secret a replica writes is 64 hex characters


class ChatStoreError(Exception):
    """A saved chat cannot be used; the message is meant for the person, as is."""


def storage_is_ephemeral(data_dir: str | Path) -> bool:
    """On a Space, whether saved chats live outside a mounted volume (they are gone when the Space restarts)."""
    if not os.environ.get("SPACE_ID"):
        return False
    real = os.path.realpath(str(data_dir))
    return not (real == "/data" or real.startswith("/data/"))


def default_data_dir(base_dir: str | Path, configured: str = "") -> Path:
    """`configured` (the app's AGENTDECK_DATA_DIR, ui/config/); on a Hugging Face Space with persistent storage,
    /data/agentdeck; else <base>/data."""
    configured = configured.strip()
    if configured:
        return Path(configured).expanduser().resolve()
    mounted = Path("/data")
    if os.environ.get("SPACE_ID") and mounted.is_dir() and os.access(mounted, os.W_OK):
        return mounted / "agentdeck"
    return (Path(base_dir) / "data").resolve()


def secret_file(data_dir: str | Path) -> Path:
    return Path(data_dir) / SECRET_FILE_NAME


def secret_is_configured() -> bool:
    """Whether the operator set AGENTDECK_SECRET (else a generated secret is kept in the data folder or store)."""
    return _configured_secret() is not None


def _configured_secret() -> bytes | None:
    """AGENTDECK_SECRET from the checked settings (ui/config/: at least 16 characters), None when unset."""
    from ui.config.current import current_settings

    secret = current_settings().secret
    return secret.get_secret_value().encode("utf-8") if secret is not None else None


def server_secret(data_dir: str | Path, blobs: BlobStore | None = None) -> bytes:
    """AGENTDECK_SECRET when set, else the secret file in the data folder (created with mode 0600), or with a
    shared chat store the `secret` blob in it: the first replica creates it (create-only), every other reads
    it, so all replicas sign and verify with one secret."""
    configured = _configured_secret()
    if configured is not None:
        return configured
    if blobs is None or isinstance(blobs, LocalBlobs):
        return load_or_create_secret(secret_file(data_dir))
    for _ in range(3):
        try:
            found = blobs.get(SECRET_FILE_NAME, max_bytes=SECRET_MAX_BYTES)
        except BlobTooLarge:
            raise ChatStoreError(f"The secret in the chat store {blobs.url} is over {SECRET_MAX_BYTES:,} bytes (not "
                                 "one a replica wrote); delete it or set AGENTDECK_SECRET.") from None
        if found is not None:
            if len(found.data.strip()) < 32:
                raise ChatStoreError(f"The secret in the chat store {blobs.url} is too short; delete it or set "
                                     "AGENTDECK_SECRET.")
            return found.data.strip()
        try:
            blobs.put(SECRET_FILE_NAME, secrets.token_hex(32).encode("ascii"), expect=MISSING)
        except VersionConflict:
            continue  # another replica created it first: read theirs
    raise ChatStoreError(f"The signing secret in the chat store {blobs.url} could not be read or created.")
