"""Telling a changed signing secret from a changed file.

Every saved chat's memory is signed with a key derived from the server's secret (ui/saved/store.py). When that
secret changes (AGENTDECK_SECRET set to another value, or the data folder's `secret` file deleted, so a new one
is generated), every saved chat fails its signature check. Blaming each file ("changed, copied, or saved by
another server") sends the operator looking in the wrong place. So each memory carries, inside its signed
document, a public fingerprint of the secret that signed it (`secret_id`: an HMAC of a fixed label, which says
nothing about the secret), and the data folder keeps the fingerprint of the secret the server last started with
(`secret.id`): a refused chat whose fingerprint differs says the secret changed and what to restore, and the
start-up log says so once for all chats.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
from pathlib import Path

SECRET_ID_KEY = "secret_id"  # the field in a memory's signed metadata
SECRET_ID_FILE = "secret.id"  # in the data folder: the fingerprint of the secret of the last start
LOG = logging.getLogger("agentdeck")

SECRET_CHANGED = ("This saved chat was refused: it was signed with another server secret. The server's signing "
                  "secret changed since it was saved (AGENTDECK_SECRET was set to another value, or the data "
                  "folder's `secret` file was deleted or replaced); the chat itself is intact. To open it again, "
                  "the operator restores the previous secret (the old AGENTDECK_SECRET value, or the old `secret` "
                  "file) and restarts the server.")


def secret_id(secret: bytes) -> str:
    """A public fingerprint of the secret: equal for equal secrets, and no help in guessing one."""
    return hmac.new(secret, b"agentdeck-secret-id", hashlib.sha256).hexdigest()[:16]


def unverified_secret_id(data: bytes) -> str | None:
    """The fingerprint a memory file says it was signed with, read WITHOUT checking the signature: only to choose
    which refusal to show (a forged value changes the wording, never what is loaded)."""
    try:
        document = json.loads(data.decode("utf-8"))["document"]
        found = (document.get("metadata") or {}).get(SECRET_ID_KEY)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return found if isinstance(found, str) else None


def note_secret_at_start(data_dir: Path, secret: bytes, had_chats: bool, file_was_missing: bool) -> str | None:
    """Compare the secret with the one of the last start (data_dir/secret.id), record it, and log a warning when
    saved chats will be refused; returns the warning (None when nothing changed)."""
    marker = data_dir / SECRET_ID_FILE
    current = secret_id(secret)
    try:
        previous: str | None = marker.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        previous = None
    warning = None
    if had_chats and previous is not None and previous != current:
        warning = ("The server's signing secret changed since the last start: every saved chat signed before will "
                   "be refused. Restore the previous secret (the old AGENTDECK_SECRET value, or the old "
                   f"{data_dir / 'secret'} file) and restart to open them again.")
    elif had_chats and file_was_missing:
        warning = (f"The signing secret file {data_dir / 'secret'} was missing, so a new secret was made: saved "
                   "chats signed with the old one will be refused. Restore the old file (or set AGENTDECK_SECRET "
                   "to its value) and restart to open them again.")
    if warning:
        LOG.warning("AgentDeck: %s", warning)
    if previous != current:
        try:
            marker.write_text(current + "\n", encoding="ascii")
        except OSError:
            pass  # a read-only data folder: the per-chat refusal still names the cause
    return warning
