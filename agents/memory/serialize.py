"""Saving and loading an agent's memory as a signed, versioned JSON document (never pickle).

Document (schema_version 1):

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

import dataclasses
import hashlib
import hmac
import json
import math
import os
import re
import secrets as _secrets
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from agents.errors import MemoryFileError, MemoryIntegrityError, MemorySchemaError, MemoryTooLargeError
from agents.memory.memory import AgentMemory
from agents.memory.steps import STEP_TYPES, ActionStep, MemoryStep, Timing
from agents.models.base import TokenUsage, ToolCall

if TYPE_CHECKING:
    from agents.loop.base import MultiStepAgent

FORMAT = "agentdeck-memory"
SCHEMA_VERSION = 1
SIGNATURE_ALGORITHM = "HMAC-SHA256"
SECRET_ENV = "AGENTDECK_SECRET"
SECRET_FILE_ENV = "AGENTDECK_SECRET_FILE"
DEFAULT_SECRET_FILE = Path.home() / ".agentdeck" / "secret"
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
MAX_STEPS = 20_000
MAX_REPR_CHARS = 100_000
MIN_SECRET_BYTES = 16

#: Fields holding arbitrary Python values: stored tagged (`{"json": ...}` or `{"type", "repr"}`).
_VALUE_FIELDS = {"action_output", "output"}
_IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


# -- values that may not be JSON ---------------------------------------------------------------------
@dataclass(frozen=True)
class StoredValue:
    """A value that was not JSON when saved (a DataFrame, a figure, ...): its type and repr."""
    type_name: str
    text: str

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__


def _is_json(value: Any, depth: int = 0) -> bool:
    if depth > 64:
        return False
    if value is None or isinstance(value, (bool, str)):
        return True
    if isinstance(value, int):
        return type(value) is int
    if isinstance(value, float):
        return type(value) is float and math.isfinite(value)
    if type(value) is list:
        return all(_is_json(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(isinstance(k, str) and _is_json(v, depth + 1) for k, v in value.items())
    return False


def _safe_repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ must not stop a save
        text = f"<{type(value).__name__}: repr failed: {exc}>"
    if len(text) > MAX_REPR_CHARS:
        text = text[:MAX_REPR_CHARS] + f"... [{len(text) - MAX_REPR_CHARS} more characters]"
    return text


def encode_value(value: Any) -> dict[str, Any]:
    """`{"json": value}` for plain JSON values, else `{"type": "<module.Class>", "repr": "..."}`."""
    if isinstance(value, StoredValue):
        return {"type": value.type_name, "repr": value.text}
    if _is_json(value):
        return {"json": value}
    kind = type(value)
    return {"type": f"{kind.__module__}.{kind.__qualname__}", "repr": _safe_repr(value)}


def decode_value(data: Any) -> Any:
    if isinstance(data, dict) and set(data) == {"json"}:
        return data["json"]
    if isinstance(data, dict) and set(data) == {"type", "repr"} and all(isinstance(v, str) for v in data.values()):
        return StoredValue(data["type"], data["repr"])
    raise MemoryFileError(f"A stored value has an unknown shape: {str(data)[:80]!r}.")


def _json_safe(value: Any, depth: int = 0) -> Any:
    """Messages and similar: keep JSON as is, turn any odd leaf into its repr."""
    if _is_json(value, depth):
        return value
    if isinstance(value, (list, tuple)):
        return [_json_safe(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_safe(v, depth + 1) for k, v in value.items()}
    return _safe_repr(value)


# -- steps -------------------------------------------------------------------------------------------
def step_to_dict(step: MemoryStep) -> dict[str, Any]:
    """One step as a JSON-safe dict (extra attributes set on the step are kept, tagged as values)."""
    field_names = {f.name for f in dataclasses.fields(step)}
    data: dict[str, Any] = {"step_type": step.step_type}
    extras: dict[str, Any] = {}
    for key, value in vars(step).items():
        if key == "step_type" or key.startswith("_"):
            continue
        if key not in field_names:
            extras[key] = encode_value(value)
        elif key == "model_input_messages":
            data["model_input_length"] = len(value) if value else getattr(step, "_model_input_length", 0)
        elif key in ("messages", "history"):
            data[key] = _json_safe(list(value))
        elif isinstance(value, TokenUsage):
            data[key] = {"input_tokens": value.input_tokens, "output_tokens": value.output_tokens}
        elif isinstance(value, Timing):
            data[key] = {"start_time": value.start_time, "end_time": value.end_time}
        elif key == "tool_calls":
            data[key] = [{"id": c.id, "name": c.name, "arguments": {str(k): encode_value(v) for k, v in c.arguments.items()}}
                         for c in value]
        elif key == "decisions":
            data[key] = [encode_value(d) for d in value]
        elif key in _VALUE_FIELDS:
            data[key] = encode_value(value)
        else:
            data[key] = _json_safe(value)
    if extras:
        data["extra"] = extras
    return data


def _fail(index: int, message: str) -> MemoryFileError:
    return MemoryFileError(f"Step {index + 1} of the memory document is invalid: {message}.")


def _check_messages(value: Any, index: int, key: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise _fail(index, f"{key} must be a list")
    for message in value:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str) \
                or not isinstance(message.get("content", ""), (str, list, type(None))):
            raise _fail(index, f"{key} holds something that is not a chat message")
    return value


def _number(value: Any, index: int, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(index, f"{key} must be a number")
    return value


def step_from_dict(data: Any, index: int = 0) -> MemoryStep:
    if not isinstance(data, dict):
        raise _fail(index, "not an object")
    step_type = data.get("step_type")
    cls = STEP_TYPES.get(step_type) if isinstance(step_type, str) else None
    if cls is None:
        raise _fail(index, f"unknown step type {step_type!r}")
    step = cls()
    fields_by_name = {f.name: f for f in dataclasses.fields(cls)}
    for key, value in data.items():
        if key == "model_input_length":
            step._model_input_length = int(_number(value, index, key))  # type: ignore[attr-defined]
            continue
        if key == "step_type":
            continue
        if key == "extra":
            if not isinstance(value, dict):
                raise _fail(index, "extra must be an object")
            for name, stored in value.items():
                if not _IDENTIFIER.match(name) or name in fields_by_name or hasattr(type(step), name):
                    raise _fail(index, f"extra attribute {name!r} is not allowed")
                setattr(step, name, decode_value(stored))
            continue
        if key not in fields_by_name:
            raise _fail(index, f"unknown field {key!r} for a {step_type} step")
        default = getattr(step, key)
        if key in ("messages", "history"):
            value = _check_messages(value, index, key)
        elif isinstance(default, TokenUsage):
            if not isinstance(value, dict):
                raise _fail(index, f"{key} must be an object")
            value = TokenUsage(int(_number(value.get("input_tokens", 0), index, key)),
                               int(_number(value.get("output_tokens", 0), index, key)))
        elif isinstance(default, Timing):
            if not isinstance(value, dict):
                raise _fail(index, f"{key} must be an object")
            value = Timing(_number(value.get("start_time", 0.0), index, key), _number(value.get("end_time", 0.0), index, key))
        elif key == "tool_calls":
            if not isinstance(value, list) or not all(isinstance(c, dict) and isinstance(c.get("name"), str)
                                                      and isinstance(c.get("arguments", {}), dict) for c in value):
                raise _fail(index, "tool_calls must be a list of {id, name, arguments}")
            value = [ToolCall(name=c["name"], id=str(c.get("id", "")),
                              arguments={k: decode_value(v) for k, v in c.get("arguments", {}).items()}) for c in value]
        elif key == "decisions":
            if not isinstance(value, list):
                raise _fail(index, "decisions must be a list")
            value = [decode_value(d) for d in value]
        elif key in _VALUE_FIELDS:
            value = decode_value(value)
        elif isinstance(default, bool):
            if not isinstance(value, bool):
                raise _fail(index, f"{key} must be true or false")
        elif isinstance(default, (int, float)):
            value = _number(value, index, key)
        elif isinstance(default, str) or key in ("code", "error"):
            if not (isinstance(value, str) or (value is None and key in ("code", "error"))):
                raise _fail(index, f"{key} must be a string")
        elif isinstance(default, list):
            if not isinstance(value, list) or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
                raise _fail(index, f"{key} must be a list of strings or numbers")
        setattr(step, key, value)
    return step


# -- documents ---------------------------------------------------------------------------------------
def memory_to_dict(memory: AgentMemory, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """The versioned document of `memory` (JSON-safe; see the module docstring)."""
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "saved_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "metadata": _json_safe(dict(metadata or {})),
        "system_prompt": memory.system_prompt.system_prompt,
        "steps": [step_to_dict(step) for step in memory.steps],
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
        for key in _VALUE_FIELDS:
            if key in step:
                step[key] = {"json": step[key]} if _is_json(step[key]) else {"type": "unknown", "repr": repr(step[key])}
        steps.append(step)
    return {**document, "format": FORMAT, "schema_version": 1, "metadata": document.get("metadata", {}), "steps": steps}


#: schema_version -> function turning a document of that version into the next version.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {0: _migrate_v0}


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
                raise _fail(index, "a summary keeps a step that does not come before it")
    memory = AgentMemory(system_prompt)
    memory.steps.extend(steps)
    memory.rebuild_prompt()
    _restore_prompt_snapshots(memory)
    return memory


def _restore_prompt_snapshots(memory: AgentMemory) -> None:
    """Give loaded action steps their `model_input_messages` back where the rebuilt prompt holds it exactly:
    steps before any compaction (the prompt was append-only up to then). Others keep only the length."""
    from agents.memory.steps import PromptSnapshot

    for step in memory.steps:
        if step.step_type == "summary":
            return
        length = getattr(step, "_model_input_length", 0)
        if isinstance(step, ActionStep) and 0 < length <= len(memory.messages):
            step.model_input_messages = PromptSnapshot(memory.messages, length)


# -- signing -----------------------------------------------------------------------------------------
def canonical_json(document: Any) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def sign(document: dict[str, Any], secret: bytes) -> str:
    return hmac.new(secret, canonical_json(document), hashlib.sha256).hexdigest()


_secret_lock = threading.Lock()


def load_or_create_secret(path: str | os.PathLike) -> bytes:
    """The secret stored at `path`, created (64 random hex characters, mode 0600) when the file is missing."""
    secret_path = Path(path)
    with _secret_lock:
        if not secret_path.exists():
            secret_path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(secret_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass  # another process created it just now: read theirs
            else:
                with os.fdopen(fd, "w", encoding="ascii") as handle:
                    handle.write(_secrets.token_hex(32) + "\n")
        secret = secret_path.read_bytes().strip()
    if len(secret) < MIN_SECRET_BYTES:
        raise MemoryIntegrityError(f"The secret in {secret_path} is too short (at least {MIN_SECRET_BYTES} bytes); "
                                   "delete the file to have a new one generated.")
    return secret


def resolve_secret(secret: bytes | str | None = None) -> bytes:
    """The signing secret: `secret` if given, else $AGENTDECK_SECRET, else the file at $AGENTDECK_SECRET_FILE
    (default ~/.agentdeck/secret), created on first use."""
    if secret is None:
        env = os.environ.get(SECRET_ENV, "")
        if env:
            secret = env
        else:
            return load_or_create_secret(os.environ.get(SECRET_FILE_ENV) or DEFAULT_SECRET_FILE)
    value = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
    if len(value) < MIN_SECRET_BYTES:
        raise MemoryIntegrityError(f"The memory signing secret must be at least {MIN_SECRET_BYTES} bytes long.")
    return value


def dumps_memory(memory: AgentMemory, secret: bytes | str | None = None, metadata: dict[str, Any] | None = None) -> bytes:
    """The signed file content for `memory`."""
    key = resolve_secret(secret)
    document = memory_to_dict(memory, metadata)
    envelope = {"document": document, "signature": {"algorithm": SIGNATURE_ALGORITHM, "value": sign(document, key)}}
    return canonical_json(envelope)


def save_memory(memory: AgentMemory, path: str | os.PathLike, secret: bytes | str | None = None,
                metadata: dict[str, Any] | None = None) -> Path:
    """Write the signed document atomically (temporary file, then rename)."""
    target = Path(path)
    data = dumps_memory(memory, secret, metadata)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, target)
    return target


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


def load_memory(path: str | os.PathLike, secret: bytes | str | None = None, max_bytes: int = MAX_DOCUMENT_BYTES,
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


# -- putting a loaded memory to work ------------------------------------------------------------------
@dataclass
class RestoreReport:
    steps: int
    step_number: int
    #: (source, finding) for loaded observations that look like injected instructions.
    findings: list[tuple[str, Any]] = field(default_factory=list)


def flag_loaded_observations(memory: AgentMemory) -> list[tuple[str, Any]]:
    """Screen the observations of a loaded memory; flagged steps get the warning line in their prompt message."""
    from agents.guard import detect_injection, unfence, warning_line

    flagged: list[tuple[str, Any]] = []
    for step in memory.action_steps():
        text = "\n".join(part for part in (step.observations, step.error or "") if part)
        findings = detect_injection(unfence(text)) if text else []
        if not findings:
            continue
        source = f"memory:step {step.step_number}"
        flagged.extend((source, finding) for finding in findings)
        note = warning_line(source)
        for message in reversed(step.messages):
            if message.get("role") == "user" and isinstance(message.get("content"), str):
                if note not in message["content"]:
                    message["content"] = note + "\n" + message["content"]
                break
    if flagged:
        memory.rebuild_prompt()
    return flagged


def restore_agent_memory(agent: "MultiStepAgent", source: AgentMemory | str | os.PathLike,
                         secret: bytes | str | None = None, emit: Callable[[Any], None] | None = None) -> RestoreReport:
    """Install a saved memory (a path, or an AgentMemory already loaded) in `agent`, ready for `run(..., reset=False)`.

    Loaded observations are screened for injected instructions: each finding is returned in the report,
    emitted as `InjectionFlagged` through `emit` when given, and the flagged step's observation gets a
    warning line. Sandbox state is not restored here: see `rebuild_sandbox_state`.
    """
    from agents.events import InjectionFlagged

    memory = source if isinstance(source, AgentMemory) else load_memory(source, secret)
    findings = flag_loaded_observations(memory)
    numbers = [getattr(s, "step_number", 0) for s in memory.steps]
    step_number = max(numbers, default=0)
    agent.memory = memory
    agent._step_number = step_number
    if emit is not None:
        for source_label, finding in findings:
            number = int(source_label.rsplit(" ", 1)[-1])
            emit(InjectionFlagged(run_id="restore", step=number, source=source_label, excerpt=finding.excerpt))
    return RestoreReport(steps=len(memory.steps), step_number=step_number, findings=findings)


@dataclass
class Mismatch:
    step_number: int
    expected: str
    actual: str
    error: str | None = None


@dataclass
class SandboxRebuildReport:
    """What `rebuild_sandbox_state` did: steps re-run, skipped (with why), and mismatching output."""
    rerun: list[int] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def summary(self) -> str:
        text = f"Re-ran {len(self.rerun)} code steps, skipped {len(self.skipped)}, {len(self.mismatches)} mismatches."
        for mismatch in self.mismatches:
            text += f"\n- step {mismatch.step_number}: " + (
                f"error {mismatch.error}" if mismatch.error else f"output {mismatch.actual[:80]!r} != {mismatch.expected[:80]!r}")
        return text


def _calls_tools(step: ActionStep, tool_names: set[str]) -> list[str]:
    names = {call.name for call in step.tool_calls}
    code = step.code or ""
    names.update(name for name in tool_names if re.search(rf"\b{re.escape(name)}\s*\(", code))
    return sorted(names)


def rebuild_sandbox_state(memory: AgentMemory, agent: Any, rerun_tools: bool = False) -> SandboxRebuildReport:
    """Re-run the recorded code steps, in order, in `agent`'s sandbox (a fresh CodeAgent) to rebuild its state.

    - Steps that errored originally are skipped (their partial effects are not replayed).
    - Steps that called tools (recorded tool calls, or a tool's name called in the code) are skipped by
      default, because re-running them would call the tools again (web requests, questions to the user...);
      with `rerun_tools=True` they run and call the tools for real.
    - Each re-run step's printed output is compared with the recorded logs; a difference, or an error now,
      is reported as a Mismatch with the step number. `final_answer` in re-run code only records a value.
    """
    from agents.loop.context import RunContext

    report = SandboxRebuildReport()
    runner = getattr(agent, "runner", None)
    tool_names = set(getattr(runner, "tools", {}) or {})
    if rerun_tools and runner is not None and runner.context is None:
        runner.context = RunContext(run_id="rebuild", emit_function=lambda event: None, interrupt_flag=threading.Event())
    sandbox = agent.sandbox
    for step in memory.action_steps():
        if not step.code:
            continue
        if step.error:
            report.skipped.append((step.step_number, "errored originally"))
            continue
        tools_called = _calls_tools(step, tool_names)
        if tools_called and not rerun_tools:
            report.skipped.append((step.step_number, "called tools: " + ", ".join(tools_called)))
            continue
        result = sandbox.run(step.code)
        report.rerun.append(step.step_number)
        actual = result.logs or ""
        if result.error or actual != (step.logs or ""):
            report.mismatches.append(Mismatch(step.step_number, step.logs or "", actual, result.error or None))
    return report
