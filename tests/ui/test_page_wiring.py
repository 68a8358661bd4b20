"""Every handler the page wires takes the values it is wired with.

Why: the settings form reaches seven handlers positionally (`ui/components.py` `SettingsForm.inputs()`, then the
approval mode and more). A setting added to the form but not to one handler's parameters would shift the values
after it (that handler's approval mode would receive the new setting) and nothing would fail: Gradio only warns
when the page is built. Here its warning fails the test.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr

from ui.app import AgentDeckApp
from ui.layout import build_blocks
from ui.settings import AppConfig


def wiring_warnings(build: Callable[[], Any]) -> list[str]:
    """Gradio's complaints, while `build` runs, about a handler whose parameters do not fit its inputs."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build()
    return [str(w.message) for w in caught if "arguments for function" in str(w.message)]


def test_every_handler_of_the_page_takes_the_inputs_it_is_wired_with(tmp_path: Path) -> None:
    app = AgentDeckApp(AppConfig(model="embedded", data_dir=tmp_path / "data"))
    found = wiring_warnings(lambda: build_blocks(app))
    assert not found, ("handlers whose parameters do not fit their inputs (a setting added to SettingsForm goes into "
                       "every handler that takes the form, and into RunSettings.from_form):\n" + "\n".join(found))


def test_a_handler_given_one_value_too_many_is_seen() -> None:
    """The check itself: a form grown by one setting that a handler does not take."""
    def handler(model: str, imports: str, approval_mode: str, request: gr.Request) -> str:
        return model

    def build() -> None:
        with gr.Blocks():
            form = [gr.Textbox(), gr.Textbox(), gr.Slider()]  # model, imports and a new setting
            gr.Button().click(handler, inputs=[*form, gr.Radio()], outputs=gr.Textbox())

    assert any("handler" in message for message in wiring_warnings(build))
