"""Every handler the page wires takes the values it is wired with.

Why: Gradio only warns, when the page is built, about a handler whose parameters do not fit its inputs, and
the event then fails (or a value lands in the wrong parameter) only when it fires. Here its warning fails the
test. The settings form reaches its handlers by name, whole (tests/ui/test_settings_form.py).
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
    assert not found, "handlers whose parameters do not fit their inputs:\n" + "\n".join(found)


def test_a_handler_given_one_value_too_many_is_seen() -> None:
    """The check itself: a form grown by one setting that a handler does not take."""
    def handler(model: str, imports: str, approval_mode: str, request: gr.Request) -> str:
        return model

    def build() -> None:
        with gr.Blocks():
            form = [gr.Textbox(), gr.Textbox(), gr.Slider()]  # model, imports and a new setting
            gr.Button().click(handler, inputs=[*form, gr.Radio()], outputs=gr.Textbox())

    assert any("handler" in message for message in wiring_warnings(build))
