"""AgentDeck as an MCP server: `python -m agents.mcp_server --model MODEL` serves one tool over stdio,
`run_task(task)`, which runs a CodeAgent on the task (its code in the sandbox) and returns its final answer.

Why: an MCP client (an IDE, a desktop assistant, another agent) gets a whole agent as one tool. Each call is a
fresh agent (and model adapter) with a workspace of its own, removed afterwards; calls run side by side in the
server's event loop (`arun`, agents/loop/async_api.py). The agent runs autonomously: nobody is there to approve
a step, so only the sandbox bounds what its code does (agents/executor/README.md); it has no tools that reach
outside.
"""
from __future__ import annotations

import argparse
import tempfile
from typing import Any

from agents.loop.code_agent import CodeAgent
from agents.models import load_model


def build_server(model: str | None, max_steps: int = 10, authorized_imports: list[str] | None = None) -> Any:
    """The MCP server (not yet running); `model` is a model string as `load_model` takes (None: the default)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("agentdeck")
    load_model(model)  # a wrong model string fails now, not at the first call

    @server.tool()
    async def run_task(task: str) -> str:
        """Run a Python-writing agent on `task` in a sandbox and return its final answer as text."""
        with tempfile.TemporaryDirectory(prefix="agentdeck-mcp-") as workdir, \
                CodeAgent(tools=[], model=load_model(model), max_steps=max_steps, workdir=workdir, verbosity=0,
                          authorized_imports=authorized_imports or ()) as agent:
            result = await agent.arun(task, return_result=True)
        if result.state.value == "error":
            raise ToolError(f"The agent failed: {result.error}")
        return str(result.output)

    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve an AgentDeck code agent as an MCP tool over stdio.")
    parser.add_argument("--model", default=None, help="model string (default: as `python -m agents` chooses)")
    parser.add_argument("--max-steps", type=int, default=10)
    parser.add_argument("--imports", default="", help="comma-separated extra imports the agent's code may use")
    options = parser.parse_args(argv)
    imports = [name.strip() for name in options.imports.split(",") if name.strip()]
    build_server(options.model, options.max_steps, imports).run("stdio")


if __name__ == "__main__":
    main()
