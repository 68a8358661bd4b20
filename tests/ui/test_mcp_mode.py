"""Gradio's MCP server mode asked for: the start is refused with the reason, not served without it in silence."""
from __future__ import annotations

import os
import subprocess
import sys

import gradio as gr
import pytest

from agents.errors import ConfigurationError
from tests.ui.ui_testlib import PROJECT_ROOT, free_port, write_transcript
from ui.web.mcp_mode import gradio_mcp_mode_works, mcp_mode_requested, refuse_gradio_mcp_mode


def test_the_installed_sdk_is_why_gradios_mode_fails() -> None:
    """The cause, seen in Gradio itself: its MCP server cannot be built with the installed SDK. If an upgrade
    fixes this, this test fails, and the refusal (ui/web/mcp_mode.py) should give way to Gradio's mode."""
    from gradio.mcp import GradioMCPServer

    assert not gradio_mcp_mode_works()
    with gr.Blocks() as demo:
        box = gr.Textbox()
        box.submit(lambda text: text, inputs=[box], outputs=[box], api_name="echo")
    with pytest.raises(AttributeError, match="call_tool"):
        GradioMCPServer(demo)


def test_what_counts_as_asking_for_it() -> None:
    assert mcp_mode_requested({}, {"GRADIO_MCP_SERVER": "True"})
    assert mcp_mode_requested({}, {"GRADIO_MCP_SERVER": "true"})
    assert not mcp_mode_requested({}, {"GRADIO_MCP_SERVER": "False"})
    assert not mcp_mode_requested({}, {})
    assert mcp_mode_requested({"mcp_server": True}, {})
    assert not mcp_mode_requested({"mcp_server": False}, {"GRADIO_MCP_SERVER": "True"})  # launch's argument wins


def test_asked_for_in_code_it_is_refused_with_what_works_instead() -> None:
    with pytest.raises(ConfigurationError) as caught:
        refuse_gradio_mcp_mode({"mcp_server": True}, {})
    message = str(caught.value)
    assert "mcp<2" in message and "agents.mcp_server" in message and "GRADIO_MCP_SERVER" in message
    refuse_gradio_mcp_mode({}, {})  # not asked for: nothing to say


def test_app_py_with_gradio_mcp_server_stops_and_says_why(tmp_path) -> None:
    """`python app.py` with GRADIO_MCP_SERVER=True: before, Gradio served the page without the MCP endpoint and
    printed nothing (the app launches quietly); now the process ends with the reason."""
    transcript = write_transcript(tmp_path / "t.json", ["Thought: done.\n```python\nfinal_answer('x')\n```"])
    env = {**os.environ, "AGENTDECK_MODEL": f"replay:{transcript}", "AGENTDECK_DATA_DIR": str(tmp_path / "data"),
           "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(free_port()),
           "GRADIO_ANALYTICS_ENABLED": "False", "GRADIO_MCP_SERVER": "True"}
    try:
        done = subprocess.run([sys.executable, str(PROJECT_ROOT / "app.py")], cwd=PROJECT_ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("app.py kept serving with GRADIO_MCP_SERVER=True, which it cannot honour")
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "AgentDeck cannot start: Gradio's MCP server mode" in done.stderr
