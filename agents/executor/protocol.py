"""The channel between the app and a sandbox worker: length-prefixed JSON frames.

Why JSON and not pickle: the worker runs untrusted code, so whatever it sends
must be plain data the parent can parse without running anything. Each frame is
a 4-byte big-endian length followed by UTF-8 JSON. Bytes travel as
``{"$bytes": "<base64>"}``.

This module is imported by both sides. In the worker it must not rely on
anything user code could monkey-patch later, so the encoder and scanner are
built once from the C accelerators and kept private.
"""

from __future__ import annotations

import base64
import json
import json.decoder
import json.encoder
import json.scanner
import os
import select
import struct
import time
from collections.abc import Callable
from typing import Any, overload

MAX_FRAME_BYTES = 64 * 1024 * 1024  # a worker cannot make the parent allocate more
# What one read asks for when no longer frame is under way: below glibc's threshold for serving an allocation with
# its own mmap (128 KiB), so a small frame costs one read. A 1 MiB read buffer cost an mmap, a page fault, an
# mremap and an munmap (with a TLB flush) on both sides of every step. A longer frame reads what it still needs.
READ_CHUNK = 64 * 1024
MAX_READ = 1 << 20
_HEADER = struct.Struct(">I")


class ProtocolError(Exception):
    """The other side sent something that is not a valid frame."""


class ChannelClosed(ProtocolError):
    """The other side closed its end (the worker exited or crashed)."""


def _default(obj: object) -> dict[str, str]:
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return {"$bytes": base64.b64encode(bytes(obj)).decode("ascii")}
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def _str_default(obj: object) -> dict[str, str] | str:
    """Fallback used for tool arguments and results: anything unknown becomes str()."""
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return _default(obj)
    try:
        return str(obj)
    except Exception:
        return f"<unprintable {type(obj).__name__}>"


def _make_encoder(default: Callable[[object], object]) -> Callable[[object], str]:
    c_make_encoder = getattr(json.encoder, "c_make_encoder", None)  # the C accelerator (not in the stubs)
    if c_make_encoder is None:  # pragma: no cover - CPython always has _json
        enc = json.JSONEncoder(default=default, separators=(",", ":"), ensure_ascii=True)

        def encode_slowly(obj: object) -> str:
            return "".join(enc.iterencode(obj))

        return encode_slowly
    basestring = json.encoder.encode_basestring_ascii

    def encode(obj: object) -> str:
        # A fresh markers dict per call: a failed encode leaves entries behind.
        inner = c_make_encoder({}, default, basestring, None, ":", ",", False, False, True)
        return "".join(inner(obj, 0))

    return encode


def _make_decoder() -> Callable[[str], Any]:
    def object_hook(d: dict[str, Any]) -> Any:
        if len(d) == 1 and "$bytes" in d:
            return base64.b64decode(d["$bytes"])
        return d

    ctx = json.decoder.JSONDecoder(object_hook=object_hook)
    # The C scanner, else the decoder's own (neither is in the stubs).
    c_make_scanner = getattr(json.scanner, "c_make_scanner", None)
    scanner = c_make_scanner(ctx) if c_make_scanner else getattr(ctx, "scan_once")  # noqa: B009

    def decode(text: str) -> Any:
        try:
            obj, end = scanner(text, 0)
        except StopIteration as exc:
            raise ProtocolError("invalid JSON frame") from exc
        if end != len(text):
            raise ProtocolError("trailing data in JSON frame")
        return obj

    return decode


encode_json = _make_encoder(_default)
encode_json_lenient = _make_encoder(_str_default)
decode_json = _make_decoder()
_pack = _HEADER.pack
_unpack = _HEADER.unpack
_os_read = os.read
_os_write = os.write
_select = select.select
_sched_yield = os.sched_yield


def frame(msg: dict[str, Any], lenient: bool = False) -> bytes:
    data = (encode_json_lenient if lenient else encode_json)(msg).encode("utf-8")
    header: bytes = _pack(len(data))
    return header + data


def write_frame(fd: int, msg: dict[str, Any], lenient: bool = False) -> None:
    data = memoryview(frame(msg, lenient))
    while data:
        n = _os_write(fd, data)
        data = data[n:]


class FrameReader:
    """Reads frames from a file descriptor, with an optional timeout.

    The parent uses the timeout (and an extra wake-up fd) so it can enforce the
    run timeout and react to interrupt() without a reader thread.
    """

    def __init__(self, fd: int, max_bytes: int = MAX_FRAME_BYTES, max_containers: int = 1_000_000):
        self.fd = fd
        self.max_bytes = max_bytes
        self.max_containers = max_containers
        self._buf = bytearray()

    def _want(self) -> int:
        """How much the next read asks for: the rest of a long frame under way (up to MAX_READ), else READ_CHUNK."""
        buf = self._buf
        if len(buf) >= 4:
            size: int = _unpack(bytes(buf[:4]))[0]
            return max(READ_CHUNK, min(4 + size - len(buf), MAX_READ))
        return READ_CHUNK

    def _try_parse(self) -> dict[str, Any] | None:
        buf = self._buf
        if len(buf) < 4:
            return None
        (size,) = _unpack(bytes(buf[:4]))
        if size > self.max_bytes:
            raise ProtocolError(f"frame of {size} bytes exceeds the limit")
        if len(buf) < 4 + size:
            return None
        payload = bytes(buf[4 : 4 + size])
        del buf[: 4 + size]
        if payload.count(b"[") + payload.count(b"{") > self.max_containers:
            raise ProtocolError("frame with too many nested lists or objects")  # parsing would cost gigabytes
        try:
            msg = decode_json(payload.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError, MemoryError) as exc:
            raise ProtocolError(f"undecodable frame: {type(exc).__name__}") from None
        if not isinstance(msg, dict):
            raise ProtocolError("frame is not a JSON object")
        return msg

    @overload
    def read(self, timeout: None = None, wake_fd: None = None, spin_s: float = 0.0) -> dict[str, Any]: ...

    @overload
    def read(self, timeout: float | None = None, wake_fd: int | None = None,
             spin_s: float = 0.0) -> dict[str, Any] | None: ...

    def read(self, timeout: float | None = None, wake_fd: int | None = None,
             spin_s: float = 0.0) -> dict[str, Any] | None:
        """Return the next message, or None on timeout or when wake_fd becomes readable.

        ``spin_s`` polls (yielding the CPU between polls) for that long before sleeping in select(): waking
        a sleeping reader costs tens of microseconds on a virtual machine (a one-byte pipe round trip took
        67 us sleeping, 24 us polling, on the development machine). Only worth it where a reply is expected
        within a few milliseconds.
        """
        msg = self._try_parse()
        if msg is not None:
            return msg
        now = time.monotonic()
        deadline = None if timeout is None else now + timeout
        fds = [self.fd] if wake_fd is None else [self.fd, wake_fd]
        if spin_s > 0:
            spin_end = now + (spin_s if timeout is None else min(spin_s, timeout))
            while not _select(fds, (), (), 0)[0] and time.monotonic() < spin_end:
                _sched_yield()
        while True:
            if deadline is not None or wake_fd is not None:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                ready, _, _ = select.select(fds, [], [], left)
                if not ready:
                    return None
                if wake_fd is not None and wake_fd in ready and self.fd not in ready:
                    return None
            chunk = _os_read(self.fd, self._want())
            if not chunk:
                raise ChannelClosed("channel closed")
            self._buf += chunk
            msg = self._try_parse()
            if msg is not None:
                return msg


#: What a `ready` frame may hold: a worker reports a dozen layers and a few warnings, each a short text.
READY_MAX_ITEMS = 64
READY_MAX_NAME = 64
READY_MAX_TEXT = 2000


def ready_problem(msg: Any) -> str | None:
    """What is wrong with a worker's `ready` frame (None: it is one). Why: the frame comes over the channel, from
    a remote sandbox too, and the app logs its warnings and builds the security report from its layers; a
    malformed one must end the start clearly, not fail deep in the app."""
    if not isinstance(msg, dict) or msg.get("op") != "ready":
        return "it is not a ready frame"
    layers, warnings = msg.get("layers", []), msg.get("warnings", [])
    if not isinstance(layers, list) or len(layers) > READY_MAX_ITEMS:
        return f"its layers are not a list of at most {READY_MAX_ITEMS}"
    for layer in layers:
        if not (isinstance(layer, dict) and isinstance(layer.get("name"), str) and layer["name"]
                and len(layer["name"]) <= READY_MAX_NAME and isinstance(layer.get("active"), bool)
                and isinstance(layer.get("detail"), str) and len(layer["detail"]) <= READY_MAX_TEXT):
            return "a layer is not {name, active, detail} of short texts and a boolean"
    if not isinstance(warnings, list) or len(warnings) > READY_MAX_ITEMS or not all(
            isinstance(w, str) and len(w) <= READY_MAX_TEXT for w in warnings):
        return f"its warnings are not a list of at most {READY_MAX_ITEMS} short texts"
    return None
