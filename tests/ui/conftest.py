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


class _PreviewsInThisProcess:
    """The preview child's own parsing and reply checks, run in the test process: each format is tested in the
    fast loop without starting a confined child per file (~0.35 s each); the `child` parameter runs the same
    tests through the real child in the whole suite (and test_preview_worker, test_attack_preview test it)."""

    def __init__(self) -> None:
        from ui.uploads.preview_worker import PreviewService

        self.checks = PreviewService()  # its reply checks only: no child is started

    def preview(self, path: object, name: str) -> tuple[str, str]:
        from ui.uploads.preview_worker import answer

        return self.checks.result(answer({"path": str(path), "name": name}), str(path), name)


@pytest.fixture(params=["in_process", pytest.param("child", marks=pytest.mark.slow)])
def preview_route(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Where uploads are previewed: in this process (fast loop) or in the confined child (whole suite)."""
    if request.param == "in_process":
        import ui.uploads.intake as intake

        in_process = _PreviewsInThisProcess()
        monkeypatch.setattr(intake, "preview_service", lambda: in_process)
    return str(request.param)
