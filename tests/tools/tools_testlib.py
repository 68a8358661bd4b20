"""Test helpers for the tools tests: a threaded loopback HTTP server with pluggable routes.

Imported by conftest.py and the test modules (pytest puts this folder on sys.path; it has no __init__.py).
"""
from __future__ import annotations

import json
import threading
import time
import wave
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import numpy as np


@dataclass
class Reply:
    """What a route answers: status, headers, body, and an optional delay before the body."""

    status: int = 200
    body: bytes | str = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


Route = Callable[[Request], Reply]


class LocalServer:
    """A ThreadingHTTPServer on 127.0.0.1 with a random port; routes map a path to a function or Reply."""

    def __init__(self) -> None:
        self.routes: dict[str, Route | Reply] = {}
        self.requests: list[Request] = []
        self.fallback: Route | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep pytest output clean
                pass

            def _handle(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = Request(self.command, parts.path, parse_qs(parts.query),
                                  {k.lower(): v for k, v in self.headers.items()}, body)
                server.requests.append(request)
                route = server.routes.get(parts.path) or server.fallback
                if route is None:
                    reply = Reply(404, b"<html><body><h1>Not found</h1></body></html>",
                                  {"Content-Type": "text/html"})
                else:
                    reply = route(request) if callable(route) else route
                data = reply.body.encode() if isinstance(reply.body, str) else reply.body
                try:
                    self.send_response(reply.status)
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if reply.delay:
                        self.wfile.flush()
                        time.sleep(reply.delay)
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def start(self) -> LocalServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def write_wav(path: Path, samples: np.ndarray, rate: int = 16000, channels: int = 1, width: int = 2) -> Path:
    data = np.repeat(samples[:, None], channels, axis=1) if channels > 1 else samples
    if width == 2:
        frames = (data * 32767).astype("<i2").tobytes()
    elif width == 1:
        frames = (data * 127 + 128).astype(np.uint8).tobytes()
    else:
        raise ValueError(width)
    with wave.open(str(path), "wb") as writer:
        writer.setnchannels(channels)
        writer.setsampwidth(width)
        writer.setframerate(rate)
        writer.writeframes(frames)
    return path


def _byte_level_vocab() -> dict[str, int]:
    """GPT-2 style byte-to-unicode table, so every byte has a token and the tokenizer needs no download."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    codes, extra = printable[:], 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            codes.append(256 + extra)
            extra += 1
    vocab = {chr(code): index for index, code in enumerate(codes)}
    for special in ("<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|translate|>", "<|transcribe|>",
                    "<|startoflm|>", "<|startofprev|>", "<|nocaptions|>", "<|notimestamps|>"):
        vocab[special] = len(vocab)
    return vocab


def build_tiny_whisper(folder: Path) -> Path:
    """Save a Whisper with tiny dimensions, random weights and an offline-built tokenizer to `folder`."""
    from transformers import (
        WhisperConfig,
        WhisperFeatureExtractor,
        WhisperForConditionalGeneration,
        WhisperProcessor,
        WhisperTokenizer,
    )

    vocab = _byte_level_vocab()
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    end = "<|endoftext|>"
    tokenizer = WhisperTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), unk_token=end,
                                 bos_token=end, eos_token=end, pad_token=end)
    config = WhisperConfig(
        vocab_size=len(vocab), num_mel_bins=80, d_model=16, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
        max_source_positions=1500, max_target_positions=64, pad_token_id=vocab[end], bos_token_id=vocab[end],
        eos_token_id=vocab[end], decoder_start_token_id=vocab["<|startoftranscript|>"], suppress_tokens=[],
        begin_suppress_tokens=[],
    )
    model = WhisperForConditionalGeneration(config)
    model.generation_config.max_length = 12
    model.generation_config.no_timestamps_token_id = vocab["<|notimestamps|>"]
    model.generation_config.forced_decoder_ids = None
    model.save_pretrained(folder)
    processor = WhisperProcessor(feature_extractor=WhisperFeatureExtractor(feature_size=80), tokenizer=tokenizer)
    processor.save_pretrained(folder)
    return folder
