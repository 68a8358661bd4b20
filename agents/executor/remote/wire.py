"""The one stream's framing: the worker's bytes and the supervisor's control messages, multiplexed and bounded.

Why a frame of our own around the worker's: the worker's frames must reach the app unchanged (tool calls
included), while the app also asks the supervisor for what only it can read (threads, CPU, disk). Each frame is
one kind byte, a 4-byte big-endian length and the payload; each kind has its own size bound, checked from the
header before anything is buffered, so neither side can be made to hold more than one bounded frame.

Kinds, app -> supervisor: `W` bytes for the worker's command pipe (the supervisor thaws the worker first),
`C` a control request (JSON object with an integer `id`), `I` interrupt, `K` kill (both empty, never answered).
Supervisor -> app: `W` bytes the worker wrote on its result pipe (raw: the app parses and bounds the worker's
frames itself), `R` the reply to a control request (JSON object with the request's `id`), `X` the worker ended
(JSON: how). Replies come in the order of the requests, after every `W` byte the supervisor read before them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from ..protocol import ProtocolError, decode_json, encode_json

HEADER = struct.Struct(">cI")
CHUNK_BYTES = 256 * 1024  # worker bytes per `W` frame the supervisor sends
#: The largest payload of each kind, per direction (the app's commands may be large: a run's code).
TO_SUPERVISOR = {b"W": 1024 * 1024, b"C": 1024 * 1024, b"I": 0, b"K": 0}
TO_APP = {b"W": CHUNK_BYTES, b"R": 64 * 1024, b"X": 4096}
CONTROL_MAX_CONTAINERS = 64  # a reply is a flat object; a request carries the spec (a few lists)


class WireError(ProtocolError):
    """The other side sent a frame of an unknown kind, over its bound, or a control message that is not valid."""


def pack(kind: bytes, payload: bytes = b"") -> bytes:
    return HEADER.pack(kind, len(payload)) + payload


def pack_json(kind: bytes, obj: dict[str, Any]) -> bytes:
    return pack(kind, encode_json(obj).encode("utf-8"))


def decode_control(payload: bytes, max_containers: int = CONTROL_MAX_CONTAINERS) -> dict[str, Any]:
    """A control request or reply: one JSON object, few containers (so its parsing is cheap), or `WireError`."""
    if payload.count(b"[") + payload.count(b"{") > max_containers:
        raise WireError("control message with too many lists or objects")
    try:
        obj = decode_json(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError, ProtocolError) as exc:
        raise WireError(f"undecodable control message: {type(exc).__name__}") from None
    if not isinstance(obj, dict):
        raise WireError("control message is not a JSON object")
    return obj


@dataclass
class Deframer:
    """Splits bytes from the stream into (kind, payload) frames, refusing a kind or length it was not told of
    (`bounds`) as soon as the header shows it."""

    bounds: dict[bytes, int]

    def __post_init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[tuple[bytes, bytes]]:
        self._buf += data
        out: list[tuple[bytes, bytes]] = []
        while len(self._buf) >= HEADER.size:
            kind, size = HEADER.unpack_from(self._buf)
            limit = self.bounds.get(kind)
            if limit is None:
                raise WireError(f"unknown frame kind {kind!r} on the sandbox stream")
            if size > limit:
                raise WireError(f"{kind.decode('latin-1')} frame of {size} bytes over its bound of {limit}")
            if len(self._buf) < HEADER.size + size:
                break
            out.append((kind, bytes(self._buf[HEADER.size:HEADER.size + size])))
            del self._buf[:HEADER.size + size]
        return out

    @property
    def partial(self) -> int:
        """Bytes of a frame begun but not complete (an app asking `has_pending` counts them as pending)."""
        return len(self._buf)
