"""Fixtures for the executor tests: one sandbox for the whole session where possible (a worker that preloads
numpy, pandas and matplotlib costs about 0.7 s of CPU to start; tests that need a fresh or special one make
their own)."""

from __future__ import annotations

import os

import pytest

from agents.executor import PythonSandbox

SECRET = "sk-agentdeck-test-secret-9f3b2c"
os.environ["AGENTDECK_TEST_SECRET"] = SECRET  # the app's environment: must never reach a worker


def make_sandbox(tmp_path_factory, name="ws", **kwargs) -> PythonSandbox:
    workdir = tmp_path_factory.mktemp(name)
    kwargs.setdefault("authorized_imports", ["numpy", "pandas", "matplotlib"])
    kwargs.setdefault("timeout_s", 10)
    return PythonSandbox(workdir=str(workdir), **kwargs)


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory):
    sb = make_sandbox(tmp_path_factory)
    yield sb
    sb.close()


@pytest.fixture(scope="session")
def open_sandbox(tmp_path_factory):
    """authorized_imports=["*"]: layers 1-2 let everything import, so the OS layers are tested."""
    sb = make_sandbox(tmp_path_factory, "wild", authorized_imports=["*"], memory_limit_mb=512)
    yield sb
    sb.close()


@pytest.fixture(scope="session")
def landlock_active(sandbox) -> bool:
    return sandbox.security_report()["landlock"]["active"]


@pytest.fixture
def assert_no_secret():
    """Check that the app's secret appears nowhere in an ExecutionResult."""

    def check(result) -> None:
        blob = f"{result.logs}{result.output}{result.error}"
        assert SECRET not in blob

    return check
