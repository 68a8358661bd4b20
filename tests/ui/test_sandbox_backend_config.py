"""The app's sandbox backend (AGENTDECK_SANDBOX) and warm pool (AGENTDECK_SANDBOX_POOL) from its environment."""

from __future__ import annotations

import pytest
from ui_testlib import code_reply, write_transcript

from ui.agent_factory import build_agent
from ui.config import SettingsError
from ui.server import check_sandbox_backend
from ui.settings import AppConfig, RunSettings


def test_the_app_runs_code_on_the_configured_backend(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTDECK_SANDBOX", "local")
    monkeypatch.setenv("AGENTDECK_SANDBOX_POOL", "0")
    config = AppConfig.from_env(tmp_path)
    assert (config.sandbox, config.sandbox_pool) == ("local", 0)
    check_sandbox_backend(config.sandbox)
    transcript = write_transcript(tmp_path / "t.json", [code_reply("done", "final_answer(1)")])
    config = AppConfig(model=f"replay:{transcript}", data_dir=tmp_path / "data", sandbox="local", sandbox_pool=1)
    agent = build_agent(RunSettings(model=config.model), tmp_path / "ws", config)
    try:
        assert (agent.sandbox_backend, agent.sandbox_pool) == ("local", True)
    finally:
        agent.close()


def test_the_app_refuses_to_start_on_a_backend_it_cannot_use(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTDECK_SANDBOX", "no-such-backend")  # unknown: refused by the settings object
    with pytest.raises(SettingsError, match="AGENTDECK_SANDBOX is 'no-such-backend'.*accepts one of local, docker"):
        AppConfig.from_env(tmp_path)
    # Known but not usable here (no engine, say): refused at start with the reason and what is usable.
    monkeypatch.setattr("agents.executor.backends.unavailable_reason",
                        lambda name: None if name == "local" else "no Docker Engine answers")
    with pytest.raises(SystemExit, match="AGENTDECK_SANDBOX=docker: no Docker Engine answers.*usable here: local"):
        check_sandbox_backend("docker")
