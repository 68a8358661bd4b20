"""The app's settings object (ui/config/): every AGENTDECK_* variable typed and checked at start-up, the README's
table written from it, and the settings form's step limit taken from the same definition."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import gradio as gr
import pytest

from ui.config import MAX_STEPS_LIMIT, AppSettings, SettingsError, accepts, fields, load_settings, variable_names
from ui.config.table import README, START, table, with_table
from ui.settings import AppConfig, RunSettings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in list(os.environ):
        if name.startswith("AGENTDECK_"):
            monkeypatch.delenv(name)


@pytest.mark.parametrize("variable, value, says", [
    ("AGENTDECK_MAX_STEPS", "abc", "AGENTDECK_MAX_STEPS is 'abc', which it does not accept; it accepts a whole "
                                   f"number from 1 to {MAX_STEPS_LIMIT}."),
    ("AGENTDECK_MAX_STEPS", "110", f"AGENTDECK_MAX_STEPS is '110', which it does not accept; it accepts a whole "
                                   f"number from 1 to {MAX_STEPS_LIMIT}."),
    ("AGENTDECK_APPROVAL_MODE", "sometimes", "AGENTDECK_APPROVAL_MODE is 'sometimes', which it does not accept; it "
                                             "accepts one of autonomous, review_plans, approve_code, approve_tools, "
                                             "all."),
    ("AGENTDECK_SANDBOX", "vm", "AGENTDECK_SANDBOX is 'vm', which it does not accept (unknown sandbox backend 'vm'); "
                                "it accepts one of local, docker, e2b, k8s."),
    ("AGENTDECK_TRUST_FORWARDED", "maybe", "AGENTDECK_TRUST_FORWARDED is 'maybe'"),
    # Read as on for 1 alone where it acts (ui/web/rate_limit.py): `true` is refused, never half-taken.
    ("AGENTDECK_TRUST_FORWARDED", "true", "AGENTDECK_TRUST_FORWARDED is 'true', which it does not accept (only 1 "
                                          "turns it on); it accepts 1 or 0."),
    ("AGENTDECK_HF_LOGIN", "yes", "it accepts 1 or 0."),
    ("AGENTDECK_SANDBOX_UIDS", "5-2", "AGENTDECK_SANDBOX_UIDS is '5-2'"),
    ("AGENTDECK_EXEC_TIMEOUT_S", "0", "it accepts a number from 1 to 86_400."),
    ("AGENTDECK_DEVICE", "gpu", "it accepts cpu, cuda, cuda:N or mps."),
])
def test_a_bad_value_stops_the_start_naming_the_variable_what_it_got_and_what_it_accepts(
        tmp_path, monkeypatch, variable, value, says):
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError) as caught:
        AppConfig.from_env(tmp_path)
    assert str(caught.value).startswith("AgentDeck cannot start: ") and says in str(caught.value)


def test_every_bad_variable_is_named_at_once_and_a_secret_is_never_repeated(monkeypatch):
    monkeypatch.setenv("AGENTDECK_MAX_STEPS", "-1")
    monkeypatch.setenv("AGENTDECK_METRICS_TOKEN", "hunter2hunter")
    monkeypatch.setenv("AGENTDECK_SECRET", "tooshort")
    with pytest.raises(SettingsError) as caught:
        load_settings()
    text = str(caught.value)
    assert len(caught.value.problems) == 3 and "AGENTDECK_MAX_STEPS is '-1'" in text
    assert "AGENTDECK_METRICS_TOKEN is a hidden value of 13 characters" in text and "hunter2" not in text
    assert "AGENTDECK_SECRET is a hidden value of 8 characters" in text and "tooshort" not in text
    assert "text of 16 characters or more" in text


def test_python_app_py_prints_the_problem_plainly(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTDECK_")}
    env.update(AGENTDECK_MAX_STEPS="abc", AGENTDECK_DATA_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "app.py"], env=env, capture_output=True, text=True, timeout=300,
                         cwd=str(ROOT))
    assert out.returncode == 2
    assert "AgentDeck cannot start: AGENTDECK_MAX_STEPS is 'abc'" in out.stderr
    assert "Traceback" not in out.stderr and "ValidationError" not in out.stderr


def test_values_are_typed_and_the_defaults_are_the_documented_ones(tmp_path, monkeypatch):
    config = AppConfig.from_env(tmp_path)
    assert (config.max_steps, config.sandbox, config.sandbox_pool, config.approval_mode) == (10, "local", 1,
                                                                                                 "autonomous")
    assert config.upload_mb_per_hour == 20 * 50 and config.max_tokens_per_run is None and config.auth is None
    monkeypatch.setenv("AGENTDECK_MODELS", " a/b , c/d,,a/b ")
    monkeypatch.setenv("AGENTDECK_ALLOW_ANY_MODEL", "yes")
    monkeypatch.setenv("AGENTDECK_MAX_UPLOAD_MB", "10")
    monkeypatch.setenv("AGENTDECK_MAX_TOKENS_PER_RUN", "")  # empty is unset, as before
    monkeypatch.setenv("AGENTDECK_AUTHORIZED_IMPORTS", "numpy, os.path, not a module")
    config = AppConfig.from_env(tmp_path)
    assert config.allowed_models == ("a/b", "c/d") and config.free_choice is True
    assert config.max_upload_bytes == 10 * 2**20 and config.upload_mb_per_hour == 200
    assert config.authorized_imports == ("numpy", "os.path") and config.max_tokens_per_run is None
    monkeypatch.setenv("AGENTDECK_AUTHORIZED_IMPORTS", "")  # set but empty: no imports beyond the standard ones
    monkeypatch.setenv("AGENTDECK_MAX_STEPS", "  ")  # blank: unset, the default
    config = AppConfig.from_env(tmp_path)
    assert config.authorized_imports == () and config.max_steps == 10


def test_an_unknown_variable_is_logged_by_name(monkeypatch, caplog):
    monkeypatch.setenv("AGENTDECK_MAX_STEP", "5")  # a typo would otherwise be ignored in silence
    with caplog.at_level(logging.WARNING, logger="ui.config"):
        load_settings()
    assert "AGENTDECK_MAX_STEP name no setting" in caplog.text


def test_every_setting_has_a_description_and_says_what_it_accepts():
    for name, info in fields():
        assert info.description and len(info.description) > 10, name
        assert accepts(info), name
    assert len(variable_names()) == len(set(variable_names())) == len(AppSettings.model_fields)


def test_the_readme_table_is_written_from_the_settings_object():
    readme = README.read_text(encoding="utf-8")
    assert with_table(readme) == readme, "README.md's settings table is stale: python -m ui.config.table --write"
    for name in variable_names():
        assert f"| `{name}` |" in readme
    # A hand edit of the table is found (the check can fail).
    edited = readme.replace("| `AGENTDECK_MAX_STEPS` |", "| `AGENTDECK_MAX_STEPS` | edited |", 1)
    assert with_table(edited) != edited and table() in with_table(edited) and START in readme


def test_the_table_command_checks_and_writes(tmp_path, monkeypatch):
    from ui.config import table as table_module

    copy = tmp_path / "README.md"
    copy.write_text(f"intro\n{START}\nold rows\n{table_module.END}\nafter\n", encoding="utf-8")
    monkeypatch.setattr(table_module, "README", copy)
    assert table_module.main(["--check"]) == 1
    assert table_module.main(["--write"]) == 0 and table_module.main(["--check"]) == 0
    assert copy.read_text(encoding="utf-8").startswith("intro\n") and "old rows" not in copy.read_text()


def test_the_forms_step_limit_and_the_settings_range_are_one_definition(tmp_path, monkeypatch):
    """AGENTDECK_MAX_STEPS=110 made every run fail against the form's maximum of 50: now the variable's range is
    the form's, so the largest default the operator may set is one the form shows and a run accepts."""
    from ui.settings_form import build

    top = AppSettings.model_fields["max_steps"].metadata
    assert any(getattr(item, "le", None) == MAX_STEPS_LIMIT for item in top)
    monkeypatch.setenv("AGENTDECK_MAX_STEPS", str(MAX_STEPS_LIMIT + 1))
    with pytest.raises(SettingsError, match=f"from 1 to {MAX_STEPS_LIMIT}"):
        AppConfig.from_env(tmp_path)
    monkeypatch.setenv("AGENTDECK_MAX_STEPS", str(MAX_STEPS_LIMIT))
    config = AppConfig.from_env(tmp_path)
    with gr.Blocks():
        form = build(config, gr.Textbox(value=config.model))
    slider = form.max_steps
    assert (slider.minimum, slider.maximum, slider.value) == (1, MAX_STEPS_LIMIT, MAX_STEPS_LIMIT)
    settings = RunSettings.from_form(config, model=config.model, agent_type="code", max_steps=None,
                                     planning_interval=None, tools=[], imports=None)
    assert settings.max_steps == MAX_STEPS_LIMIT


def test_the_app_hands_the_library_its_settings_as_parameters(tmp_path, monkeypatch):
    """What the library no longer reads from the environment, the app passes: process-wide host settings at start
    (ui/config/apply.py), and per agent the retry policy, compaction budget, pool size and record transcript."""
    from ui_testlib import code_reply, write_transcript

    from agents.executor import identity
    from agents.host_settings import HostSettings, host_settings
    from agents.models.recorder import RecordingModel
    from ui.agent_factory import build_agent, model_options
    from ui.config.apply import apply_to_libraries

    monkeypatch.setattr("agents.host_settings._current", HostSettings())
    for name, value in {"SANDBOX_UIDS": "50000-50009", "TORCH_THREADS": "2", "DOCKER_CPUS": "0.5",
                        "DOCKER_HOST": "unix:///run/other.sock", "CACHE_DIR": str(tmp_path / "c"),
                        "CONTEXT_BUDGET": "5000", "MODEL_MAX_RETRIES": "7", "MODEL_MAX_RETRY_AFTER": "3",
                        "RECORD": str(tmp_path / "rec.json")}.items():
        monkeypatch.setenv(f"AGENTDECK_{name}", value)
    config = AppConfig.from_env(tmp_path)
    assert host_settings() == HostSettings()  # reading the settings changes nothing by itself
    apply_to_libraries(config.settings)
    got = host_settings()
    assert (got.sandbox_uids, got.torch_threads, got.docker_cpus) == ((50000, 50010), 2, 0.5)
    assert (got.docker_host, got.cache_dir) == ("unix:///run/other.sock", str(tmp_path / "c"))
    assert identity.uid_range() == (50000, 50010)
    retry = model_options("openai/gpt-4.1", config)["retry"]
    assert (retry.max_retries, retry.max_retry_after) == (7, 3.0)
    transcript = write_transcript(tmp_path / "t.json", [code_reply("done", "final_answer(1)")])
    agent = build_agent(RunSettings(model=f"replay:{transcript}"), tmp_path / "ws", config)
    try:
        assert isinstance(agent.model, RecordingModel) and agent.compactor.context_budget == 5000
    finally:
        agent.close()
