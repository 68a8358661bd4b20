"""A tiny stdio MCP server used by the MCP loader tests (run as a subprocess)."""
from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("agentdeck-test-server")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def greet(name: str, punctuation: str = "!", times: int | None = None) -> str:
    """Greet someone by name."""
    return f"Hello, {name}{punctuation}" * (times or 1)


@server.tool()
def search_items(tags: list[str], limit: float = 1.5, exact: bool = False, filters: dict | None = None) -> str:
    """Search items by tags (used to check the JSON-schema to input mapping)."""
    return ",".join(tags)


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"deliberate failure: {reason}")


@server.tool(name="weird-name.v2")
def weird(text: str) -> str:
    """A tool whose name is not a Python identifier."""
    return text.upper()


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 2 and sys.argv[1] == "--http":  # `--http PORT`: Streamable HTTP on 127.0.0.1
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
