"""The worker's settings recorded on a claim, so a replica that attaches later starts the same worker.

Why on the claim: another replica has only the claim's name (what the chat recorded). What is recorded is the
imports, the tools and the limits; never the extra environment (it may carry values meant for one session) and
never the security switches: a replica that attaches always starts the worker with every layer on, whatever the
note says (anyone able to edit claims could otherwise switch a layer off). The note is read as hostile: a shape
or a value it does not expect is refused, not guessed.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from ..backend import SandboxLimits, SandboxSpec
from ..errors import SandboxError

ANNOTATION = "agentdeck/worker-settings"
NOTE_MAX_BYTES = 64 * 1024
_LIMITS = {f.name: f.type for f in dataclasses.fields(SandboxLimits)}


def spec_to_claim(spec: SandboxSpec) -> str:
    """The note for a claim: JSON of the spec's imports, tools and limits."""
    return json.dumps({"authorized_imports": list(spec.authorized_imports), "tools": sorted(spec.tools),
                       "limits": dataclasses.asdict(spec.limits), "owner": spec.owner[:200]}, separators=(",", ":"))


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > 1000 or not all(isinstance(v, str) and len(v) < 200
                                                                    for v in value):
        raise SandboxError(f"the claim's note has invalid {what}")
    return tuple(value)


def spec_from_claim(note: str | None) -> SandboxSpec:
    """The spec (without a workspace) a note describes; `SandboxError` for a missing or malformed note."""
    if not note or len(note) > NOTE_MAX_BYTES:
        raise SandboxError("the claim records no worker settings: it was not made by this app's k8s backend")
    try:
        data = json.loads(note)
    except ValueError as exc:
        raise SandboxError("the claim's worker settings are not JSON") from exc
    if not isinstance(data, dict) or not isinstance(data.get("limits"), dict):
        raise SandboxError("the claim's worker settings have the wrong shape")
    limits: dict[str, Any] = {}
    for name, value in data["limits"].items():
        kind = _LIMITS.get(name)
        if kind is None:
            continue  # a field of another version of the app: its default here
        ok = type(value) is int if kind == "int" else type(value) in (int, float)
        if not ok or value < 0:
            raise SandboxError(f"the claim's worker setting {name!r} is invalid")
        limits[name] = value
    return SandboxSpec(workspace=None, authorized_imports=_strings(data.get("authorized_imports"), "imports"),
                       tools=_strings(data.get("tools"), "tools"), limits=SandboxLimits(**limits),
                       owner=owner if isinstance(owner := data.get("owner"), str) and len(owner) <= 200 else "")
