"""Saving and loading an agent's memory as a signed, versioned JSON document (never pickle).

Document (schema_version 2; version 1 had no `error_type` on steps, 0 is the first experiments):

    {"format": "agentdeck-memory", "schema_version": 1, "saved_at": "<ISO time>", "metadata": {...},
     "system_prompt": "...", "steps": [{"step_type": "action", "step_number": 1, "messages": [...], ...}, ...]}

Every step keeps its cached `messages` (so the prompt is rebuilt exactly, compaction included), code, tool
calls, observations, logs, errors, plans, artifacts (workspace-relative paths), timings, token usage and
decisions. `model_input_messages` (the prompt each step saw) is not stored, only its length
(`model_input_length`): it is a prefix of the prompt the other steps rebuild, and storing it would make
documents grow with the square of the number of steps. Values that may be anything (final answers, tool
arguments, decisions) are stored as `{"json": value}` when they are plain JSON, else as
`{"type": "pandas.core.frame.DataFrame", "repr": "..."}`; they load back as `StoredValue`.

File: `{"document": <document>, "signature": {"algorithm": "HMAC-SHA256", "value": "<hex>"}}`, the HMAC
computed with a server secret over the canonical JSON of the document (sorted keys, no spaces, UTF-8).
Loading checks, in order: file size (before reading), JSON, signature, schema version (older documents
are migrated, newer ones refused), step count, then builds every step; only a fully valid document
yields an AgentMemory, so nothing is ever loaded half-way.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets as _secrets
import tempfile
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agents.errors import MemoryFileError, MemoryIntegrityError, MemorySchemaError, MemoryTooLargeError
from agents.memory.codec import (
    VALUE_FIELDS,
    field_error,
    is_json,
    json_safe,
    loaded_prompt_length,
    step_from_dict,
    step_to_dict,
)
from agents.memory.memory import AgentMemory
from agents.memory.steps import ActionStep, PromptSnapshot

FORMAT = "agentdeck-memory"
SCHEMA_VERSION = 2
SIGNATURE_ALGORITHM = "HMAC-SHA256"
DEFAULT_SECRET_FILE = Path.home() / ".agentdeck" / "secret"
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
MAX_STEPS = 20_000
MIN_SECRET_BYTES = 16
#: Fields holding arbitrary Python values: stored tagged (`{"json": ...}` or `{"type", "repr"}`).


# -- documents ---------------------------------------------------------------------------------------
def memory_to_dict(memory: AgentMemory, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """The versioned document of `memory` (JSON-safe; see the module docstring)."""
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "saved_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "metadata": json_safe(dict(metadata or {})),
        "system_prompt": memory.system_prompt.system_prompt,
        "steps": [step_to_dict(step) for step in memory.steps],
        # A run that ended at a decision (agents/decisions/pending.py): signed with the rest, resumable anywhere.
        **({"pending": memory.pending.to_dict()} if memory.pending is not None else {}),
    }


def _migrate_v0(document: dict[str, Any]) -> dict[str, Any]:
    """v0 (the first experiments): no token usage, `observation` in one word, a bare `duration_s` instead
    of timing, final answers stored untagged, no `format` field."""
    steps = []
    for raw in document.get("steps", []):
        if not isinstance(raw, dict):
            steps.append(raw)
            continue
        step = dict(raw)
        if step.get("step_type") in ("action", "planning"):
            if "observation" in step:
                step["observations"] = step.pop("observation")
            duration = step.pop("duration_s", 0.0)
            step.setdefault("timing", {"start_time": 0.0, "end_time": float(duration or 0.0)})
            step.setdefault("token_usage", {"input_tokens": 0, "output_tokens": 0})
        for key in VALUE_FIELDS:
            if key in step:
                step[key] = {"json": step[key]} if is_json(step[key]) else {"type": "unknown", "repr": repr(step[key])}
        steps.append(step)
    return {**document, "format": FORMAT, "schema_version": 1, "metadata": document.get("metadata", {}), "steps": steps}


_V1_REJECTION = "The user rejected this action"
_V1_REASON = " with this reason: "


def _migrate_v1(document: dict[str, Any]) -> dict[str, Any]:
    """v1 did not record an error's type, only the text the model was told. A step with an error gets the type
    its reopened chat showed then: the person's rejection (their reason, from the one sentence AgentDeck wrote
    for it) or a plain "Error". Version 2 records the type as the step happens (agents/step_events/)."""
    steps = []
    for raw in document.get("steps", []):
        step = dict(raw) if isinstance(raw, dict) else raw
        if isinstance(step, dict) and step.get("step_type") == "action" and "error_type" not in step \
                and isinstance(step.get("error"), str) and step["error"].strip():
            first = step["error"].strip().splitlines()[0]
            if first.startswith(_V1_REJECTION):
                reason = first[len(_V1_REJECTION):]
                reason = reason[len(_V1_REASON):] if reason.startswith(_V1_REASON) else ""
                step["error_type"], step["error_message"] = "RejectedByUser", reason or "Rejected."
            else:
                step["error_type"] = "Error"
        steps.append(step)
    return {**document, "schema_version": 2, "steps": steps}


#: schema_version -> function turning a document of that version into the next version.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {0: _migrate_v0, 1: _migrate_v1}


def migrate(document: dict[str, Any]) -> dict[str, Any]:
    """Bring an older document up to SCHEMA_VERSION; refuse unknown or newer versions with a clear message."""
    version = document.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise MemorySchemaError("The memory document has no valid schema_version: it is not an AgentDeck memory file.")
    if version > SCHEMA_VERSION:
        raise MemorySchemaError(
            f"The memory document has schema version {version}, written by a newer AgentDeck; this one reads "
            f"versions up to {SCHEMA_VERSION}. Upgrade AgentDeck to load it.")
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise MemorySchemaError(f"Memory documents of schema version {version} can no longer be read "
                                    f"(no migration to version {version + 1}).")
        document = step(document)
        version = document["schema_version"]
    return document


def memory_from_dict(document: Any, max_steps: int = MAX_STEPS) -> AgentMemory:
    """An AgentMemory from a document (migrated first); its prompt is rebuilt from the steps' messages."""
    if not isinstance(document, dict):
        raise MemoryFileError("The memory document must be a JSON object.")
    document = migrate(document)
    if document.get("format", FORMAT) != FORMAT:
        raise MemoryFileError(f"Not an AgentDeck memory document (format {document.get('format')!r}).")
    raw_steps = document.get("steps")
    if not isinstance(raw_steps, list):
        raise MemoryFileError("The memory document has no list of steps.")
    if len(raw_steps) > max_steps:
        raise MemoryTooLargeError(f"The memory document has {len(raw_steps)} steps; the limit is {max_steps}.")
    system_prompt = document.get("system_prompt", "")
    if not isinstance(system_prompt, str):
        raise MemoryFileError("The memory document's system_prompt must be a string.")
    steps = [step_from_dict(raw, index) for index, raw in enumerate(raw_steps)]
    for index, step in enumerate(steps):
        for kept in getattr(step, "kept_steps", []) if step.step_type == "summary" else []:
            if not isinstance(kept, int) or not 0 <= kept < index:
                raise field_error(index, "a summary keeps a step that does not come before it")
    memory = AgentMemory(system_prompt)
    memory.steps.extend(steps)
    memory.rebuild_prompt()
    _restore_prompt_snapshots(memory)
    if document.get("pending") is not None:
        from agents.decisions.pending import PendingDecision
        try:
            memory.pending = PendingDecision.from_dict(document["pending"])
        except ValueError as exc:
            raise MemorySchemaError(f"The memory document's pending decision cannot be read: {exc}.") from exc
    return memory


def _restore_prompt_snapshots(memory: AgentMemory) -> None:
    """Give loaded action steps their `model_input_messages` back where the rebuilt prompt holds it exactly:
    steps before any compaction (the prompt was append-only up to then). Others keep only the length."""
    for step in memory.steps:
        if step.step_type == "summary":
            return
        length = loaded_prompt_length(step)
        if isinstance(step, ActionStep) and 0 < length <= len(memory.messages):
            step.model_input_messages = PromptSnapshot(memory.messages, length)


# -- signing -----------------------------------------------------------------------------------------
def canonical_json(document: Any) -> bytes:
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.encode("utf-8")


def sign(document: dict[str, Any], secret: bytes) -> str:
    return hmac.new(secret, canonical_json(document), hashlib.sha256).hexdigest()


_secret_lock = threading.Lock()


def load_or_create_secret(path: str | os.PathLike[str]) -> bytes:
    """The secret stored at `path`, created (64 random hex characters, mode 0600) when the file is missing."""
    secret_path = Path(path)
    with _secret_lock:
        if not secret_path.exists():
            _publish_new_secret(secret_path)
        secret = secret_path.read_bytes().strip()
    if len(secret) < MIN_SECRET_BYTES:
        raise MemoryIntegrityError(f"The secret in {secret_path} is too short (at least {MIN_SECRET_BYTES} bytes); "
                                   "delete the file to have a new one generated.")
    return secret


def _publish_new_secret(secret_path: Path) -> None:
    """Write a new secret to a private temp file, then link it into place: another process sees either no
    file or the complete one (never an empty file), and if two race, both end up reading the winner's."""
    secret_path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(prefix=".secret-", dir=secret_path.parent)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(_secrets.token_hex(32) + "\n")
        os.chmod(temp_name, 0o600)
        try:
            os.link(temp_name, secret_path)
        except FileExistsError:
            pass  # another process published its secret first: use theirs
    finally:
        os.unlink(temp_name)


def resolve_secret(secret: bytes | str | None = None) -> bytes:
    """The signing secret: `secret` if given, else the file ~/.agentdeck/secret, created on first use (the app
    passes its own: ui/saved/store.py)."""
    if secret is None:
        return load_or_create_secret(DEFAULT_SECRET_FILE)
    value = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
    if len(value) < MIN_SECRET_BYTES:
        raise MemoryIntegrityError(f"The memory signing secret must be at least {MIN_SECRET_BYTES} bytes long.")
    return value


def dumps_memory(memory: AgentMemory, secret: bytes | str | None = None,
                 metadata: dict[str, Any] | None = None) -> bytes:
    """The signed file content for `memory`."""
    key = resolve_secret(secret)
    document = memory_to_dict(memory, metadata)
    envelope = {"document": document, "signature": {"algorithm": SIGNATURE_ALGORITHM, "value": sign(document, key)}}
    return canonical_json(envelope)


def save_memory(memory: AgentMemory, path: str | os.PathLike[str], secret: bytes | str | None = None,
                metadata: dict[str, Any] | None = None) -> Path:
    """Write the signed document atomically and serialised per file (agents/memory/atomic.py)."""
    from agents.memory.atomic import atomic_write_bytes

    return atomic_write_bytes(path, dumps_memory(memory, secret, metadata))


def loads_memory(data: bytes | str, secret: bytes | str | None = None, max_bytes: int = MAX_DOCUMENT_BYTES,
                 max_steps: int = MAX_STEPS) -> AgentMemory:
    """Verify and load signed file content (e.g. an upload). See `load_memory`."""
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if len(raw) > max_bytes:
        raise MemoryTooLargeError(f"The memory file is {len(raw):,} bytes; the limit is {max_bytes:,} bytes.")
    key = resolve_secret(secret)
    try:
        envelope = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError, RecursionError) as exc:
        raise MemoryFileError(f"The file is not a valid AgentDeck memory file (corrupted or not JSON): {exc}") from None
    if not isinstance(envelope, dict) or set(envelope) != {"document", "signature"}:
        raise MemoryFileError("The file is not a signed AgentDeck memory file (expected `document` and `signature`).")
    signature = envelope["signature"]
    if not isinstance(signature, dict) or signature.get("algorithm") != SIGNATURE_ALGORITHM \
            or not isinstance(signature.get("value"), str):
        raise MemoryIntegrityError(f"The memory file's signature is missing or not {SIGNATURE_ALGORITHM}.")
    try:
        expected = sign(envelope["document"], key)
    except (TypeError, ValueError, RecursionError) as exc:
        raise MemoryFileError(f"The memory document cannot be checked: {exc}") from None
    if not hmac.compare_digest(expected, signature["value"]):
        raise MemoryIntegrityError(
            "The memory file's signature does not match: it was modified after saving, or saved by another "
            "AgentDeck server (another secret). It was not loaded.")
    return memory_from_dict(envelope["document"], max_steps=max_steps)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in a memory file")


def load_memory(path: str | os.PathLike[str], secret: bytes | str | None = None, max_bytes: int = MAX_DOCUMENT_BYTES,
                max_steps: int = MAX_STEPS) -> AgentMemory:
    """Load a signed memory file. The size is checked before anything is read or parsed; a tampered or
    foreign file raises MemoryIntegrityError, a newer schema MemorySchemaError, too big MemoryTooLargeError."""
    source = Path(path)
    try:
        size = source.stat().st_size
    except OSError as exc:
        raise MemoryFileError(f"Cannot read the memory file {source}: {exc.strerror or exc}.") from None
    if size > max_bytes:
        raise MemoryTooLargeError(f"The memory file {source.name} is {size:,} bytes; the limit is {max_bytes:,} bytes.")
    with open(source, "rb") as handle:
        data = handle.read(max_bytes + 1)  # the file may have grown since stat()
    return loads_memory(data, secret, max_bytes=max_bytes, max_steps=max_steps)
