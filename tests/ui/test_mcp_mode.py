"""The MCP server switches (GRADIO_MCP_SERVER=True, launch(mcp_server=True)) are answered by the app's own endpoint
(ui/mcp/), and Gradio's MCP mode, which cannot run with the pinned mcp SDK, is never started."""
from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import gradio as gr
import pytest
from starlette.middleware import Middleware

from tests.ui.ui_testlib import PROJECT_ROOT, free_port, write_transcript
from tests.waiting import wait_until
from ui.mcp.endpoint import McpEndpointMiddleware
from ui.server import launch_kwargs
from ui.services import Services
from ui.settings import AppConfig
from ui.web.body_limit import BodyLimitMiddleware
from ui.web.mcp_mode import gradio_mcp_mode_works, mcp_mode_requested, take_mcp_switch


def test_the_installed_sdk_is_why_gradios_mode_cannot_be_used() -> None:
    """The cause, seen in Gradio itself: its MCP server cannot be built with the installed SDK. If an upgrade
    fixes this, this test fails, and the choice of ui/web/mcp_mode.py is worth a second look."""
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


def test_the_switch_is_taken_out_of_launchs_arguments() -> None:
    overrides = {"mcp_server": True, "server_port": 1}
    assert take_mcp_switch(overrides, {}) and overrides == {"server_port": 1}
    overrides = {}
    assert take_mcp_switch(overrides, {"GRADIO_MCP_SERVER": "True"})
    assert not take_mcp_switch({"mcp_server": False}, {"GRADIO_MCP_SERVER": "True"})


def test_gradio_is_always_told_no_and_the_endpoint_sits_inside_the_body_limit(tmp_path: Path) -> None:
    config = AppConfig(model="replay:none.json", data_dir=tmp_path)
    off = launch_kwargs(config)
    assert off["mcp_server"] is False
    assert not any(m.cls is McpEndpointMiddleware for m in off["app_kwargs"]["middleware"])
    on = launch_kwargs(config, mcp_services=Services.create(config))
    assert on["mcp_server"] is False
    classes = [m.cls for m in on["app_kwargs"]["middleware"] if isinstance(m, Middleware)]
    assert classes.index(BodyLimitMiddleware) < classes.index(McpEndpointMiddleware)


def test_launch_with_mcp_server_true_serves_the_endpoint(tmp_path: Path) -> None:
    """`launch(mcp_server=True)` in code, GRADIO_MCP_SERVER unset: the SDK's client lists the app's tools."""
    transcript = write_transcript(tmp_path / "t.json", ["Thought: done.\n```python\nfinal_answer('x')\n```"])
    port = free_port()
    env = {**os.environ, "AGENTDECK_MODEL": f"replay:{transcript}", "AGENTDECK_DATA_DIR": str(tmp_path / "data"),
           "GRADIO_ANALYTICS_ENABLED": "False"}
    env.pop("GRADIO_MCP_SERVER", None)
    code = ("import app\nfrom ui.server import launch\n"
            f"launch(app.config, app=(app.demo, app.controller), mcp_server=True, server_name='127.0.0.1', "
            f"server_port={port})\n")
    log = (tmp_path / "server.log").open("w")
    process = subprocess.Popen([sys.executable, "-c", code], cwd=PROJECT_ROOT, env=env, stdout=log,
                               stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"

    def serving() -> bool:
        if process.poll() is not None:
            raise AssertionError((tmp_path / "server.log").read_text()[-3000:])
        try:
            with urllib.request.urlopen(url + "config", timeout=2):
                return True
        except (urllib.error.URLError, OSError):
            return False

    async def tools() -> list[str]:
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        async with create_mcp_http_client(headers={"Authorization": f"Bearer {secrets.token_hex(32)}"}) as http:
            async with Client(streamable_http_client(url + "gradio_api/mcp/", http_client=http)) as client:
                return [tool.name for tool in (await client.list_tools()).tools]

    try:
        wait_until(serving, timeout=120, what="the app to serve", poll_s=0.1)
        assert sorted(asyncio.run(tools())) == ["list_chats", "list_files", "read_file", "resume", "run_task"]
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
