"""The settings form (ui/settings_form.py) is defined once and reaches every handler whole, by name.

Why: the form used to be passed positionally through seven handlers; a setting added to the form but forgotten in
one handler shifted the values after it (its approval mode got the new setting). These tests hold for any setting
the form has, so a new one is checked without a new test: it reaches every handler that takes the form, the API
keeps its order, hostile values are refused or ignored, and a saved chat shows it again.
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from nothing_lost_harness import Req
from ui_testlib import form

from ui.app import AgentDeckApp
from ui.layout import build_blocks
from ui.saved.store import settings_dict
from ui.settings import AppConfig, RunSettings, SettingsRefusedError
from ui.settings_form import FormValues, field_names, initial_values, saved_values

#: The events that take the settings form (their API names).
TAKE_THE_FORM = {"run", "run_example", "retry", "edit_last_message", "browser_session", "open_chat",
                 "take_over"}
#: What an API client may send as any setting.
HOSTILE = [math.nan, math.inf, -math.inf, 10**400, -5, True, "", "x" * 10_000, ["a", 1, None], {"a": 1}, None,
           ("hf:x",), b"bytes"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> gr.Blocks:
    app = AgentDeckApp(AppConfig(model="embedded", data_dir=tmp_path_factory.mktemp("data")))
    return build_blocks(app)


def test_every_handler_that_takes_the_form_takes_all_of_it_by_name(demo: gr.Blocks) -> None:
    by_api: dict[str, dict[str, Any]] = {}
    for fn in demo.fns.values():
        names = list(fn.input_keyword_names)
        keyword = dict(zip(names, fn.inputs[len(fn.inputs) - len(names):], strict=True))
        if any(name in keyword for name in field_names()):
            assert [n for n in names if n in field_names()] == field_names(), fn.api_name
            by_api[str(fn.api_name)] = {name: keyword[name] for name in field_names()}
    assert set(by_api) == TAKE_THE_FORM
    first = next(iter(by_api.values()))
    assert all(form_of == first for form_of in by_api.values())  # the same components everywhere


def test_the_api_keeps_its_order_the_form_then_the_approval_mode(demo: gr.Blocks) -> None:
    """API clients that pass the settings positionally: the form's settings in order, then the approval mode. (The
    page's events are no longer on the API page, ui/api/, but clients that call them by name still can.)"""
    endpoints = demo.get_api_info(all_endpoints=True)["named_endpoints"]

    def parameters(name: str) -> list[str]:
        return [p["parameter_name"] for p in endpoints[name]["parameters"]]

    assert parameters("/run") == ["message", *field_names(), "approval_mode"]
    assert parameters("/retry") == [*field_names(), "approval_mode"]
    assert parameters("/edit_last_message") == ["text", *field_names(), "approval_mode"]
    assert parameters("/browser_session") == ["state", *field_names()]


@pytest.mark.parametrize("name", field_names())
def test_any_value_of_any_setting_is_checked_never_a_crash(tmp_path: Path, name: str) -> None:
    """Through the API a visitor may send anything as any setting: it is ignored (the default) or refused with
    a reason, and what passes is within what the operator allows."""
    config = AppConfig(model="embedded", data_dir=tmp_path)
    for value in HOSTILE:
        try:
            settings = RunSettings.from_form(config, **form(config.model, **{name: value}))
        except SettingsRefusedError as exc:
            assert str(exc)
            continue
        config.check_visitor_settings(settings)
        assert 1 <= settings.max_steps and (settings.planning_interval or 1) >= 1
        assert all(isinstance(t, str) for t in settings.tools)


def test_a_hostile_setting_sent_to_the_handler_is_an_error_message_not_a_crash(tmp_path: Path) -> None:
    app = AgentDeckApp(AppConfig(model="embedded", data_dir=tmp_path))
    app.services.owners.mark_loaded("tab")
    with pytest.raises(gr.Error, match="must be a list"):
        list(app.run({"text": "hi", "files": []}, Req("tab"), **form(app.config.model, tools=42)))
    assert app.session_for(Req("tab")).record.transcript.messages() == []  # nothing was sent


def test_a_saved_chats_settings_come_back_into_the_form(tmp_path: Path) -> None:
    """What the form shows for a reopened chat gives the same settings again: every setting of the form."""
    config = AppConfig(model="embedded", data_dir=tmp_path)
    chosen = RunSettings.from_form(config, **form(config.model, agent_type="tool-calling", max_steps=7,
                                                   planning_interval=3, tools=["web_search"], imports="pandas"))
    fresh = initial_values(config)
    shown = saved_values(settings_dict(chosen), fresh)
    assert RunSettings.from_form(config, **shown.by_name()) == chosen
    assert saved_values(None, fresh) == fresh  # nothing saved: the form as it is


def test_a_fresh_pages_form_is_the_servers_default(tmp_path: Path) -> None:
    config = AppConfig(model="embedded", data_dir=tmp_path, max_steps=9)
    settings = RunSettings.from_form(config, **initial_values(config).by_name())
    assert settings.model == config.model and settings.max_steps == 9
    assert settings.authorized_imports == config.authorized_imports


def test_a_handler_needs_every_setting_of_the_form() -> None:
    """A form's values missing a setting, or with one it does not have, fail at once (never a value moved)."""
    values = form("embedded")
    with pytest.raises(TypeError):
        FormValues(**{k: v for k, v in values.items() if k != "max_steps"})
    with pytest.raises(TypeError):
        FormValues(**values, temperature=0.5)
    assert dataclasses.asdict(FormValues(**values)) == values


def test_a_negative_number_typed_in_a_settings_box_reaches_the_handler(demo: gr.Blocks, tmp_path: Path) -> None:
    """A number box with a minimum refused a value under it in Gradio's own check, before any handler ran: -3
    typed as the planning interval made every message fail with a bare "Error" over the chat and nothing saying
    why. The boxes have no bounds; RunSettings.from_form reads an out-of-range value (0 or less: no planning).
    Sliders keep theirs: the page clamps what is typed into them."""
    boxes = [b for b in demo.blocks.values() if isinstance(b, gr.Number) and str(b.elem_id).startswith("settings-")]
    assert boxes
    for box in boxes:
        assert box.preprocess(-3) == -3, box.elem_id
    config = AppConfig(model="embedded", data_dir=tmp_path)
    assert RunSettings.from_form(config, **form("embedded", planning_interval=-3)).planning_interval is None
