"""Fixtures of the model adapter tests: a loopback OpenAI-compatible server, a tiny local causal LM
built and overfit offline, and a guard that fails any connection leaving the machine."""
from __future__ import annotations

import ipaddress
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_openai_server import FakeOpenAIServer
from tiny_llm import build_tiny_model


def _is_local(address: Any) -> bool:
    if not isinstance(address, tuple) or not address:
        return True  # unix sockets and the like
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any attempt to reach a non-loopback address fails, and fails the test even if a library swallowed it."""
    attempts: list[Any] = []
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def check(address: Any) -> None:
        if not _is_local(address):
            attempts.append(address)
            raise AssertionError(f"test tried to reach the network: {address!r}")

    def guarded_connect(self: socket.socket, address: Any) -> Any:
        check(address)
        return real_connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> Any:
        check(address)
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
    yield
    assert not attempts, f"network access attempted: {attempts}"


@pytest.fixture(scope="session")
def fake_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture()
def server(fake_server: FakeOpenAIServer) -> FakeOpenAIServer:
    fake_server.reset()
    return fake_server


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model, trained once per version of its recipe and libraries and then reused: training is
    seeded and deterministic, so a cached copy is the same model (the fast test loop must not spend two
    minutes retraining it)."""
    import hashlib
    import os
    import tempfile

    import tiny_llm
    import torch
    import transformers

    recipe = Path(tiny_llm.__file__).read_bytes() + f"{torch.__version__} {transformers.__version__}".encode()
    cache = Path(os.environ.get("AGENTDECK_TEST_CACHE") or Path(tempfile.gettempdir()) / "agentdeck-test-cache")
    folder = cache / f"tiny-llama-{hashlib.sha256(recipe).hexdigest()[:16]}"
    if (folder / "config.json").is_file() and (folder / "tokenizer.json").is_file():
        return folder
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="tiny-llama-", dir=cache))
    build_tiny_model(staging)
    try:
        staging.rename(folder)  # whole or not at all: a half-written cache is never used
    except OSError:  # another run finished first
        pass
    return folder if folder.is_dir() else staging
