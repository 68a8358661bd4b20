"""A Gradio Space as a tool, against a local Gradio app on loopback standing in for the Space (gradio_client takes
its full URL): typed inputs read from its API info, calls checked before they leave, approval, save and load."""
from __future__ import annotations

import json

import gradio as gr
import pytest

from agents import Tool, load_tool
from agents.errors import SharingError, ToolInputError

RECEIVED: list[tuple[str, float, bool]] = []


def repeat(text: str, times: float = 2, shout: bool = False) -> str:
    RECEIVED.append((text, times, shout))
    out = " ".join([text] * int(times))
    return out.upper() if shout else out


@pytest.fixture(scope="module")
def space_url():
    demo = gr.Interface(repeat, inputs=[gr.Textbox(label="text"), gr.Number(label="times", value=2),
                                        gr.Checkbox(label="shout")],
                        outputs=gr.Textbox(label="result"), api_name="repeat")
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True)
    yield url
    demo.close()


def test_a_space_becomes_a_typed_tool_whose_calls_pause_for_approval(space_url):
    tool = Tool.from_space(space_url, "repeat_text", "Repeats a text.")
    assert tool.inputs == {
        "text": {"type": "string", "description": "text"},
        "times": {"type": "number", "description": "times (default 2)", "nullable": True},
        "shout": {"type": "boolean", "description": "shout (default False)", "nullable": True},
    }
    assert tool.output_type == "string" and tool.signature_text() == \
        "repeat_text(text: string, times: number = None, shout: boolean = None) -> string"
    assert tool.requires_approval is True and "Gradio Space" in tool.approval_reason
    RECEIVED.clear()
    assert tool(text="ab", times=3, shout=True) == "AB AB AB"
    assert tool(text="hi") == "hi hi"  # left-out inputs take the Space's defaults
    assert RECEIVED == [("ab", 3, True), ("hi", 2, False)]
    with pytest.raises(ToolInputError, match="should be of type number"):
        tool(text="ab", times="three")
    assert len(RECEIVED) == 2  # a wrong call never reached the Space


def test_a_space_tool_is_saved_as_its_reference_and_reconnects(space_url, tmp_path):
    Tool.from_space(space_url, "repeat_text", "Repeats a text.").save(tmp_path / "space")
    manifest = json.loads((tmp_path / "space" / "tool.json").read_text())
    assert manifest["kind"] == "space" and manifest["space"] == {"space_id": space_url, "api_name": "/repeat"}
    assert not (tmp_path / "space" / "tool.py").exists()
    loaded = load_tool(tmp_path / "space")
    assert loaded.name == "repeat_text" and loaded(text="x", times=2) == "x x"


def test_a_wrong_endpoint_or_an_unreachable_space_says_so(space_url):
    with pytest.raises(SharingError, match="has no endpoint '/nope'; it has /repeat"):
        Tool.from_space(space_url, "repeat_text", "Repeats a text.", api_name="/nope")
    with pytest.raises(SharingError, match="Cannot reach the Space 'http://127.0.0.1:9/'"):
        Tool.from_space("http://127.0.0.1:9/", "nothing", "Nothing there.")
