"""Which sandbox holds a saved chat's variables: its backend and id, kept beside the chat so another replica (or
this one after a restart) can attach it instead of re-running the chat's code (issue 28).

Why a blob of its own (`<chat>/sandbox.json`) and not the signed memory: it changes when a sandbox starts or is
attached, not with each step, and a record refused (tampered, copied from another chat) must cost only the
attach, never the chat: the memory stays readable and the variables are rebuilt as before. It is signed with a
key bound to the chat's owner and id (as the memory is: `ChatStore.chat_key`), so a record copied from another
chat, or written by someone who can write the bucket but lacks the server secret, does not verify here. The
sandbox itself records whose it is (`owner_tag`, `SandboxSpec.owner`, kept by the backend out of the worker's
reach) and the backend's `attach` refuses another's: a record that verifies still reaches only this chat's
sandbox. Only backends whose sandboxes outlive the app are recorded (`Capabilities.attach_elsewhere`).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ui.shared.blobs import BlobStoreError

if TYPE_CHECKING:
    from ui.saved.store import SavedChat

#: The most read of a record: two short names and a signature.
RECORD_MAX_BYTES = 1024
#: A backend's name and a sandbox's id as the record may hold them: plain characters, bounded.
PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


@dataclass(frozen=True)
class SandboxRef:
    """A recorded sandbox: the backend's name (`agents.executor.backends.KNOWN`) and the sandbox's id."""

    backend: str
    id: str


def _key(chat: SavedChat) -> bytes:
    label = f"chat-sandbox\0{chat.owner}\0{chat.id}".encode()
    return hmac.new(chat.store.secret, label, hashlib.sha256).digest()


def owner_tag(chat: SavedChat) -> str:
    """What the chat's sandboxes record as their owner: a keyed hash of the chat (it names no owner or chat to
    whoever reads the sandbox service's metadata, and only this server can make it)."""
    label = f"sandbox-owner\0{chat.owner}\0{chat.id}".encode()
    return hmac.new(chat.store.secret, label, hashlib.sha256).hexdigest()[:40]


def _signature(chat: SavedChat, ref: SandboxRef) -> str:
    return hmac.new(_key(chat), f"{ref.backend}\0{ref.id}".encode(), hashlib.sha256).hexdigest()


def _name(chat: SavedChat) -> str:
    return f"{chat.key}/sandbox.json"


def record(chat: SavedChat, ref: SandboxRef) -> None:
    """Keep `ref` as the chat's sandbox (over any earlier one). BlobStoreError if the store refuses."""
    if not (PLAIN.match(ref.backend) and PLAIN.match(ref.id)):
        raise ValueError(f"not a plain backend name and sandbox id: {ref.backend[:40]!r}, {ref.id[:80]!r}")
    data = {"backend": ref.backend, "id": ref.id, "sig": _signature(chat, ref)}
    chat.store.blobs.put(_name(chat), json.dumps(data).encode("ascii"))


class RecordRefused(ValueError):
    """A chat's sandbox record that is not one this server wrote for this chat (the message says how)."""


def read(chat: SavedChat) -> SandboxRef | None:
    """The chat's recorded sandbox; None when there is none. RecordRefused for a record over its size, of the
    wrong shape or characters, or whose signature is not this chat's (tampered, or copied from another chat)."""
    try:
        blob = chat.store.blobs.get(_name(chat), max_bytes=RECORD_MAX_BYTES)
    except BlobStoreError as exc:
        raise RecordRefused(f"the chat's sandbox record could not be read ({exc})") from None
    if blob is None:
        return None
    try:
        data = json.loads(blob.data.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise RecordRefused("the chat's sandbox record is not plain JSON") from None
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in ("backend", "id", "sig")):
        raise RecordRefused("the chat's sandbox record has the wrong shape")
    ref = SandboxRef(data["backend"], data["id"])
    if not (PLAIN.match(ref.backend) and PLAIN.match(ref.id)):
        raise RecordRefused("the chat's sandbox record holds characters no sandbox id has")
    if not hmac.compare_digest(data["sig"].encode("ascii", "replace"), _signature(chat, ref).encode()):
        raise RecordRefused("the chat's sandbox record is not signed for this chat (changed, or copied from "
                            "another chat)")
    return ref


def drop(chat: SavedChat, sandbox_id: str | None = None) -> None:
    """Forget the chat's sandbox (only if it is still `sandbox_id`, when given: another replica may have
    recorded a newer one). Best effort: a record left behind names a sandbox that attach then finds gone."""
    try:
        if sandbox_id is not None:
            try:
                current = read(chat)
            except RecordRefused:
                current = None
            if current is None or current.id != sandbox_id:
                return
        chat.store.blobs.delete(_name(chat))
    except (BlobStoreError, OSError):
        pass
