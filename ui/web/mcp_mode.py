"""Gradio's MCP server mode (`GRADIO_MCP_SERVER=True`, `launch(mcp_server=True)`) is refused at start, loudly.

Why: Gradio 6.31's MCP mode is written for the `mcp` 1.x SDK (its `gradio[mcp]` extra asks for `mcp>=1.21,<2`):
it registers its handlers with the low-level server's decorators (`Server.call_tool()`, `Server.list_tools()`),
which the 2.x SDK removed. The project pins `mcp` 2.x, whose client (tools/mcp_client.py: `mcp.Client`,
`streamable_http_client`) and server (agents/mcp_server.py: `mcp.server.mcpserver.MCPServer`) do not exist in
1.x, so no single version serves both. Gradio catches the AttributeError, keeps it in `blocks.mcp_error`, prints
it only when not quiet, and serves the page without `/gradio_api/mcp/`: an operator who asked for an MCP server
got none and no word why. Here the request stops the start with the reason and what works instead.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from agents.errors import ConfigurationError

#: What an operator who asked for Gradio's MCP mode is told (and the README says).
WHY = ("Gradio's MCP server mode (GRADIO_MCP_SERVER=True or launch(mcp_server=True)) cannot run here: Gradio "
       "{gradio} wants the mcp SDK 1.x (gradio[mcp] asks for mcp<2), and AgentDeck pins mcp {mcp}, which its own "
       "MCP client and server need. Unset GRADIO_MCP_SERVER (or drop mcp_server=True). To call the agent from an "
       "MCP client, run `python -m agents.mcp_server --model MODEL` (stdio); to call this app from a program, use "
       "its HTTP API (the page's \"Use via API\" link).")


def mcp_mode_requested(launch_overrides: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> bool:
    """Whether Gradio would try its MCP mode: `mcp_server` given to launch wins, else GRADIO_MCP_SERVER (read as
    Gradio reads it, case-insensitive "true")."""
    explicit = launch_overrides.get("mcp_server")
    if explicit is not None:
        return bool(explicit)
    env = os.environ if environ is None else environ
    return env.get("GRADIO_MCP_SERVER", "False").lower() == "true"


def gradio_mcp_mode_works() -> bool:
    """Whether the installed `mcp` SDK has the low-level decorators Gradio's MCP mode registers its handlers with."""
    try:
        from mcp.server import Server
    except ImportError:
        return False
    return all(hasattr(Server, name) for name in ("call_tool", "list_tools", "read_resource"))


def refuse_gradio_mcp_mode(launch_overrides: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> None:
    """ConfigurationError, with the reason and what to use instead, when Gradio's MCP mode is asked for but
    cannot work with the installed SDK (instead of Gradio's silent start without it)."""
    if not mcp_mode_requested(launch_overrides, environ) or gradio_mcp_mode_works():
        return
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "(not installed)"

    raise ConfigurationError(WHY.format(gradio=installed("gradio"), mcp=installed("mcp")))
