"""Fixtures of the UI tests; the helpers they share live in ui_testlib.py (importable by name from any test
folder, unlike a conftest, whose module name every test folder shares)."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from ui_testlib import (  # noqa: F401
    ANALYSIS_SCRIPT,
    PENGUINS,
    PROJECT_ROOT,
    SCREENSHOT_DIR,
    SLOW_SCRIPT,
    WARM_UP,
    code_reply,
    free_port,
    run_app,
    write_transcript,
)


@pytest.fixture(scope="module")
def analysis_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("analysis")
    transcript = write_transcript(base / "analysis.json", ANALYSIS_SCRIPT)
    (base / "data").mkdir()
    with run_app(transcript, base / "data") as url:
        yield url


@pytest.fixture(scope="module")
def slow_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("slow")
    # A first quick step starts the sandbox, so Stop hits code that is really running.
    transcript = write_transcript(base / "slow.json", [WARM_UP] + SLOW_SCRIPT)
    (base / "data").mkdir()
    with run_app(transcript, base / "data") as url:
        yield url
