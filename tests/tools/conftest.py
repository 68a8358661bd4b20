"""Shared fixtures for the tools tests."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tools_testlib import LocalServer, build_tiny_whisper


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: slower tests (building or loading models, subprocesses)")


@pytest.fixture
def local_server() -> Iterator[LocalServer]:
    server = LocalServer().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests only talk to 127.0.0.1: make sure no proxy from the environment gets in the way."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "DDGS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("AGENTDECK_ALLOW_PRIVATE_URLS", raising=False)


@pytest.fixture(scope="session")
def tiny_whisper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Whisper with tiny dimensions and random weights, built offline (transcripts are gibberish)."""
    return build_tiny_whisper(tmp_path_factory.mktemp("tiny-whisper"))
