"""Fixtures of the model adapter tests: a loopback OpenAI-compatible server, a tiny local causal LM
built and overfit offline, and a guard that fails any connection leaving the machine."""
from __future__ import annotations

import ipaddress
import socket
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_openai_server import FakeOpenAIServer  # noqa: E402
from tiny_llm import build_tiny_model  # noqa: E402


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
    folder = tmp_path_factory.mktemp("tiny-llama")
    build_tiny_model(folder)
    return folder
