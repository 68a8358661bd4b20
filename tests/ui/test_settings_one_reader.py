"""Every `AGENTDECK_*` setting is read through the one checked object (ui/config/), never by a module of its own.

Why: a module that read its variable itself parsed it its own way. `AGENTDECK_MAX_FILES_PER_MESSAGE=abc` was a
traceback at import, before the start-up check could name it; `AGENTDECK_MAX_PUBLISHED_MB=abc` and
`AGENTDECK_MAX_WORKSPACE_MB=abc` fell back to a default in silence wherever the check did not run first.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ui.config import SettingsError, variable_names

ROOT = Path(__file__).resolve().parents[2]
READERS = {"get", "getenv", "pop", "setdefault", "env_flag"}


def _reads_of_settings(path: Path, names: set[str]) -> list[str]:
    """`os.environ.get("AGENTDECK_X")`, `env.get(...)`, `getenv(...)`, `env_flag(...)`, `environ["..."]` of a
    setting's name, with their line numbers."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        key: ast.AST | None = None
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if called in READERS:
                key = node.args[0]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            key = node.slice
        if isinstance(key, ast.Constant) and key.value in names:
            where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
            found.append(f"{where}:{node.lineno} reads {key.value}")
    return found


def test_no_module_of_the_app_reads_a_setting_from_the_environment_itself() -> None:
    names = set(variable_names())
    files = [ROOT / "app.py", *(p for p in (ROOT / "ui").rglob("*.py") if "config" not in p.relative_to(ROOT).parts)]
    reads = [read for path in files for read in _reads_of_settings(path, names)]
    assert reads == [], "read these through ui.config.current.current_settings() instead:\n" + "\n".join(reads)


def test_the_scan_finds_a_read_of_a_setting(tmp_path: Path) -> None:
    """The scan above would see each way a module reads its variable (it is not vacuous)."""
    source = tmp_path / "probe.py"
    source.write_text('import os\nA = os.environ.get("AGENTDECK_MAX_STEPS", "1")\nB = os.environ["AGENTDECK_SECRET"]\n'
                      'C = os.getenv("AGENTDECK_MODEL")\nD = env_flag("AGENTDECK_HF_LOGIN")\n', encoding="utf-8")
    reads = _reads_of_settings(source, set(variable_names()))
    assert [read.rsplit(" ", 1)[1] for read in reads] == ["AGENTDECK_MAX_STEPS", "AGENTDECK_SECRET",
                                                         "AGENTDECK_MODEL", "AGENTDECK_HF_LOGIN"]


def test_upload_and_published_limits_follow_the_checked_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from ui.chat.published_files import max_published_bytes
    from ui.uploads.batch import max_files_per_message, workspace_quota_bytes

    monkeypatch.setenv("AGENTDECK_MAX_PUBLISHED_MB", "3")
    monkeypatch.setenv("AGENTDECK_MAX_WORKSPACE_MB", "5")
    monkeypatch.setenv("AGENTDECK_MAX_FILES_PER_MESSAGE", "4")
    assert max_published_bytes() == 3 << 20
    assert workspace_quota_bytes(1 << 20) == 5 << 20
    assert max_files_per_message() == 4
    monkeypatch.delenv("AGENTDECK_MAX_WORKSPACE_MB")
    assert workspace_quota_bytes(1 << 20) == 4 << 20  # four uploads of the largest size
    for name in ("AGENTDECK_MAX_PUBLISHED_MB", "AGENTDECK_MAX_WORKSPACE_MB"):
        monkeypatch.setenv(name, "abc")  # was a silent fall back to the default
        with pytest.raises(SettingsError, match=f"{name} is 'abc'"):
            max_published_bytes() if name.endswith("PUBLISHED_MB") else workspace_quota_bytes(1 << 20)
        monkeypatch.delenv(name)


def test_a_bad_upload_setting_stops_the_start_with_its_name_not_a_traceback(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTDECK_")}
    env.update(AGENTDECK_DATA_DIR=str(tmp_path / "data"), AGENTDECK_MODEL="embedded:smollm2",
               AGENTDECK_MAX_FILES_PER_MESSAGE="abc", AGENTDECK_PREVIEW_MEMORY_MB="lots", GRADIO_SERVER_PORT="1")
    started = subprocess.run([sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=300)
    assert started.returncode == 2, started.stderr[-2000:]
    assert "Traceback" not in started.stderr, started.stderr[-2000:]
    assert "AgentDeck cannot start:" in started.stderr
    assert "AGENTDECK_MAX_FILES_PER_MESSAGE is 'abc', which it does not accept; it accepts a whole number from 1 " \
           "to 1000." in started.stderr
    assert "AGENTDECK_PREVIEW_MEMORY_MB is 'lots'" in started.stderr


def test_the_approval_modes_the_setting_and_the_api_take_are_the_librarys() -> None:
    """One list of choices: AGENTDECK_APPROVAL_MODE, the API's `approval_mode` and the library's modes."""
    import typing

    from agents.decisions import APPROVAL_MODES
    from ui.api import endpoints
    from ui.config import AppSettings

    setting = AppSettings.model_fields["approval_mode"].annotation
    assert typing.get_args(setting) == tuple(APPROVAL_MODES)
    assert typing.get_type_hints(endpoints.ApiEndpoints.ask)["approval_mode"] == setting
