"""MCP loader: a small stdio MCP server (mcp_demo_server.py, written with the SDK's MCPServer) seen as tools."""
from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.errors import ConfigurationError, ToolError, ToolInputError
from tools.mcp_client import MCPToolset, load_mcp_toolsets
from tools.mcp_config import MCPServerSpec, parse_mcp_servers
from tools.mcp_schema import schema_to_inputs

SERVER = str(Path(__file__).with_name("mcp_demo_server.py"))


@pytest.fixture(scope="module")
def toolset() -> Iterator[MCPToolset]:
    with MCPToolset({"command": sys.executable, "args": [SERVER], "timeout": 20}) as opened:
        yield opened


@pytest.mark.slow
def test_lists_tools_with_mapped_inputs(toolset: MCPToolset) -> None:
    tools = {t.name: t for t in toolset.tools}
    assert set(tools) == {"add", "greet", "search_items", "fail", "weird_name_v2"}
    assert tools["add"].description == "Add two integers."
    assert tools["add"].inputs == {"a": {"type": "integer", "description": "A"},
                                   "b": {"type": "integer", "description": "B"}}
    greet = tools["greet"].inputs
    assert "nullable" not in greet["name"]                       # required -> not nullable
    assert greet["punctuation"]["nullable"] is True and '(default: "!")' in greet["punctuation"]["description"]
    assert greet["times"] == {"type": "integer", "description": "Times", "nullable": True}  # anyOf[int, null]
    items = tools["search_items"].inputs
    assert items["tags"]["type"] == "array" and items["tags"]["items"] == {"type": "string"}
    assert items["limit"]["type"] == "number" and items["exact"]["type"] == "boolean"
    assert items["filters"]["type"] == "object"
    schema = tools["search_items"].to_openai_schema()["function"]["parameters"]
    assert schema["required"] == ["tags"]


@pytest.mark.slow
def test_calls_tools_with_arguments(toolset: MCPToolset) -> None:
    tools = {t.name: t for t in toolset.tools}
    assert tools["add"](a=2, b=40) == "42"
    assert tools["add"](2, 3) == "5"
    assert tools["greet"](name="Ada") == "Hello, Ada!"           # omitted optional -> server default
    assert tools["greet"](name="Ada", punctuation="?", times=2) == "Hello, Ada?Hello, Ada?"
    assert tools["weird_name_v2"](text="shout") == "SHOUT"
    assert tools["search_items"](tags=["x", "y"]) == "x,y"


@pytest.mark.slow
def test_calls_from_several_threads(toolset: MCPToolset) -> None:
    add = next(t for t in toolset.tools if t.name == "add")
    results: list[str] = []
    threads = [threading.Thread(target=lambda i=i: results.append(add(a=i, b=i))) for i in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results, key=int) == ["0", "2", "4", "6", "8"]


@pytest.mark.slow
def test_tool_errors_become_tool_errors(toolset: MCPToolset) -> None:
    tools = {t.name: t for t in toolset.tools}
    with pytest.raises(ToolError, match="MCP tool 'fail' failed: .*deliberate failure: disk full"):
        tools["fail"](reason="disk full")
    with pytest.raises(ToolInputError):  # checked locally against the mapped schema before calling
        tools["add"](a="one", b=2)


@pytest.mark.slow
def test_server_that_fails_to_start_reports_stderr() -> None:
    script = "import sys; print('missing API key FOO', file=sys.stderr); sys.exit(2)"
    with pytest.raises(ConfigurationError, match=r"(?s)Could not connect to MCP server.*missing API key FOO"):
        MCPToolset({"command": sys.executable, "args": ["-c", script]})
    toolsets, errors = load_mcp_toolsets(f"{sys.executable} -c 'import sys; sys.exit(1)'; "
                                         f"{sys.executable} {SERVER}")
    try:
        assert len(toolsets) == 1 and len(errors) == 1 and "Could not connect" in errors[0]
        assert "add" in {t.name for t in toolsets[0].tools}
    finally:
        for opened in toolsets:
            opened.close()


@pytest.mark.slow
def test_closed_toolset_refuses_calls() -> None:
    opened = MCPToolset({"command": sys.executable, "args": [SERVER], "prefix": "demo"})
    add = next(t for t in opened.tools if t.name == "demo_add")
    opened.close()
    opened.close()  # twice is fine
    with pytest.raises(ToolError, match="not connected"):
        add(a=1, b=2)


def test_parse_config_formats() -> None:
    assert parse_mcp_servers("") == [] and parse_mcp_servers(None) == []
    specs = parse_mcp_servers("uvx mcp-server-time --local-timezone 'Europe/Paris' ; https://example.com/mcp")
    assert specs[0].command == "uvx" and specs[0].args == ["mcp-server-time", "--local-timezone", "Europe/Paris"]
    assert specs[1].url == "https://example.com/mcp" and specs[1].command is None
    specs = parse_mcp_servers('[{"command": "python", "args": ["s.py"], "env": {"K": "V"}, "name": "demo"},'
                              ' {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer x"}}]')
    assert specs[0] == MCPServerSpec(command="python", args=["s.py"], env={"K": "V"}, name="demo")
    assert specs[1].headers == {"Authorization": "Bearer x"}
    specs = parse_mcp_servers('{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}')
    assert specs[0].name == "time" and specs[0].label == "time"
    assert parse_mcp_servers("python -c 'a; b' ;x")[0].args == ["-c", "a; b"]
    with pytest.raises(ConfigurationError, match="cannot parse command"):
        parse_mcp_servers("python -c 'unclosed")
    with pytest.raises(ConfigurationError, match="does not parse"):
        parse_mcp_servers("[{bad json")
    with pytest.raises(ConfigurationError, match="unknown key"):
        parse_mcp_servers('{"comand": "typo"}')
    with pytest.raises(ConfigurationError, match="either a `command`"):
        parse_mcp_servers('{"args": ["x"]}')
    with pytest.raises(ConfigurationError, match="must start with http"):
        MCPServerSpec(url="ftp://x")


def test_schema_mapping_edge_cases() -> None:
    inputs, names = schema_to_inputs({
        "type": "object",
        "properties": {
            "file-path": {"type": "string", "description": "Where"},
            "class": {"type": ["string", "null"]},
            "mode": {"enum": ["fast", "slow"]},
            "blob": {},
            "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        },
        "required": ["file-path", "class", "mode", "either"],
    })
    assert names == {"file_path": "file-path", "class_": "class", "mode": "mode", "blob": "blob", "either": "either"}
    assert inputs["file_path"] == {"type": "string", "description": "Where"}
    assert inputs["class_"] == {"type": "string", "description": "class", "nullable": True}  # required but null ok
    assert inputs["mode"] == {"type": "string", "description": "mode", "enum": ["fast", "slow"]}
    assert inputs["blob"] == {"type": "any", "description": "blob", "nullable": True}
    assert inputs["either"]["type"] == ["string", "integer"]
    assert schema_to_inputs(None) == ({}, {})


@pytest.mark.slow
def test_streamable_http_server() -> None:
    import socket
    import subprocess
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, SERVER, "--http", str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as client:
                if client.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        with MCPToolset(f"http://127.0.0.1:{port}/mcp") as opened:
            tools = {t.name: t for t in opened.tools}
            assert tools["add"](a=1, b=2) == "3"
            with pytest.raises(ToolError, match="deliberate failure: net"):
                tools["fail"](reason="net")
    finally:
        process.terminate()
        process.wait(timeout=10)
