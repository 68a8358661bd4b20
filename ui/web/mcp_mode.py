"""The MCP server switches (`GRADIO_MCP_SERVER=True`, `launch(mcp_server=True)`) answered by AgentDeck's own MCP
endpoint (ui/mcp/), never by Gradio's MCP mode.

Why: Gradio 6.31's MCP mode is written for the `mcp` 1.x SDK (its `gradio[mcp]` extra asks for `mcp>=1.21,<2`):
it registers its handlers with the low-level server's decorators (`Server.call_tool()`, `Server.list_tools()`),
which the 2.x SDK removed. The project pins `mcp` 2.x, whose client (tools/mcp_client.py) and server
(agents/mcp_server.py, ui/mcp/) do not exist in 1.x. Left to itself Gradio catches the AttributeError, keeps it in
`blocks.mcp_error`, prints it only when not quiet and serves no `/gradio_api/mcp/`: an operator who asked for an
MCP server got none and no word why. So the switches are read here, Gradio is always told `mcp_server=False`, and
the app serves its own endpoint at the same address (ui/server.py).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any


def mcp_mode_requested(launch_overrides: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> bool:
    """Whether the MCP server is asked for: `mcp_server` given to launch wins, else GRADIO_MCP_SERVER (read as
    Gradio reads it, case-insensitive "true")."""
    explicit = launch_overrides.get("mcp_server")
    if explicit is not None:
        return bool(explicit)
    env = os.environ if environ is None else environ
    return env.get("GRADIO_MCP_SERVER", "False").lower() == "true"


def take_mcp_switch(launch_overrides: dict[str, Any], environ: Mapping[str, str] | None = None) -> bool:
    """Whether to serve AgentDeck's MCP endpoint; `mcp_server` is taken out of `launch_overrides` (Gradio gets
    False from `launch_kwargs`, so its own mode never starts)."""
    wanted = mcp_mode_requested(launch_overrides, environ)
    launch_overrides.pop("mcp_server", None)
    return wanted


def gradio_mcp_mode_works() -> bool:
    """Whether the installed `mcp` SDK has the low-level decorators Gradio's MCP mode registers its handlers with
    (tests/ui/test_mcp_mode.py: if an upgrade brings them back, the choice above is worth a second look)."""
    try:
        from mcp.server import Server
    except ImportError:
        return False
    return all(hasattr(Server, name) for name in ("call_tool", "list_tools", "read_resource"))
