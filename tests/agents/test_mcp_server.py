"""AgentDeck as an MCP server: a client over stdio calls `run_task` and gets the agent's answer, which its code
computed in the sandbox; two calls at once run side by side."""
from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor

from tests.agents.conftest import code
from tests.conftest import PROJECT_ROOT
from tools.mcp_client import MCPToolset


def test_run_task_over_stdio(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([code("x = sum(range(10))\nprint(x)"), code("final_answer(x)")] * 2))
    spec = {"command": sys.executable, "args": ["-m", "agents.mcp_server", "--model", f"replay:{script}"],
            "timeout": 60, "env": {"PYTHONPATH": str(PROJECT_ROOT)}}
    with MCPToolset(spec) as opened:
        (tool,) = opened.tools
        assert tool.name.endswith("run_task")
        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda task: tool(task=task), ["Sum 0..9.", "Sum 0..9 again."]))
    assert answers == ["45", "45"]
