"""Load the tools of Model Context Protocol (MCP) servers as regular AgentDeck tools.

Why it is built this way: the agent loop is synchronous but the official `mcp` SDK is async, and an
MCP client session must be entered and left in the same task. So each `MCPToolset` owns one
background thread running its own event loop, with one long-lived task that holds the session open;
tool calls are submitted to that loop with `asyncio.run_coroutine_threadsafe` and waited for with a
timeout. Server configuration lives in `tools/mcp_config.py`, schema mapping in `tools/mcp_schema.py`.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import tempfile
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from agents.errors import ConfigurationError, ToolError
from agents.tooling.base import Tool
from tools.mcp_config import MCPServerSpec, parse_mcp_servers
from tools.mcp_schema import identifier, schema_to_inputs

logger = logging.getLogger(__name__)


class MCPTool(Tool):
    """A tool served by an MCP server; calls go through the owning MCPToolset's session."""

    output_type = "string"

    def __init__(self, toolset: MCPToolset, remote_name: str, arg_names: dict[str, str],
                 required: set[str], nullable_props: set[str]) -> None:
        super().__init__()
        self.toolset = toolset
        self.remote_name = remote_name
        self.arg_names = arg_names
        self.required = required
        self.nullable_props = nullable_props

    def forward(self, **kwargs: Any) -> str:
        arguments: dict[str, Any] = {}
        for python_name, value in kwargs.items():
            prop = self.arg_names.get(python_name, python_name)
            if value is None and prop not in self.required and prop not in self.nullable_props:
                continue  # omitted optional argument: let the server use its default
            arguments[prop] = value
        result = self.toolset.call_tool(self.remote_name, arguments)
        text = _result_text(result)
        if getattr(result, "is_error", False):
            raise ToolError(f"MCP tool {self.remote_name!r} failed: {text or 'no details given'}")
        return text


def _result_text(result: Any) -> str:
    """Flatten an MCP CallToolResult into text: text blocks as is, other blocks as short placeholders."""
    parts: list[str] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            size = len(getattr(block, "data", "") or "") * 3 // 4
            parts.append(f"[{kind} content: {getattr(block, 'mime_type', 'unknown type')}, about {size:,} bytes]")
        elif kind == "resource":
            resource = getattr(block, "resource", None)
            text = getattr(resource, "text", None)
            parts.append(text if text is not None else f"[resource {getattr(resource, 'uri', '')}]")
        elif kind == "resource_link":
            parts.append(f"[resource link: {getattr(block, 'uri', '')}]")
        else:
            parts.append(str(block))
    if not parts and getattr(result, "structured_content", None) is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    return "\n".join(parts)


class MCPToolset:
    """Connect to one MCP server and expose its tools; use as a context manager or call close().

    ```python
    with MCPToolset({"command": "python", "args": ["server.py"]}) as toolset:
        agent = CodeAgent(tools=toolset.tools, ...)
    ```
    """

    def __init__(self, server: MCPServerSpec | dict[str, Any] | str, *, connect: bool = True,
                 connect_timeout: float = 30.0) -> None:
        if isinstance(server, str):
            specs = parse_mcp_servers(server)
            if len(specs) != 1:
                raise ConfigurationError(f"MCPToolset takes one server, got {len(specs)} in {server!r}.")
            server = specs[0]
        self.spec = server if isinstance(server, MCPServerSpec) else MCPServerSpec.from_dict(server)
        self.connect_timeout = connect_timeout
        self.tools: list[Tool] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: Any = None
        self._stop: asyncio.Event | None = None
        self._main: concurrent.futures.Future[Any] | None = None
        self._failure: BaseException | None = None
        self._errlog: Any = None
        if connect:
            self.connect()

    # ------------------------------------------------------------------ lifecycle
    def connect(self) -> list[Tool]:
        """Start the server (or open the HTTP session), list its tools, and build Tool objects."""
        if self._loop is not None:
            return self.tools
        try:
            import mcp  # noqa: F401
        except ImportError as exc:
            raise ConfigurationError("MCP support needs the `mcp` package: pip install mcp") from exc
        self._errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"mcp:{self.spec.label[:40]}",
                                        daemon=True)
        self._thread.start()
        ready: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
        self._main = asyncio.run_coroutine_threadsafe(self._session_main(ready), self._loop)
        try:
            remote_tools = ready.result(timeout=self.connect_timeout)
        except concurrent.futures.TimeoutError:
            self.close()
            raise ConfigurationError(f"MCP server {self.spec.label!r} did not answer within "
                                     f"{self.connect_timeout:g}s.{self._stderr_tail()}") from None
        except BaseException as exc:
            stderr = self._stderr_tail()
            self.close()
            raise ConfigurationError(f"Could not connect to MCP server {self.spec.label!r}: "
                                     f"{_describe(exc)}.{stderr}") from exc
        self.tools = [self._make_tool(remote) for remote in remote_tools]
        return self.tools

    def close(self) -> None:
        """Close the session (stopping a stdio server) and the background loop. Safe to call twice."""
        loop, self._loop = self._loop, None
        if loop is None:
            return
        if self._stop is not None:
            loop.call_soon_threadsafe(self._stop.set)
        if self._main is not None:
            try:
                self._main.result(timeout=10)
            except BaseException as exc:  # closing must not raise; the session may already be gone
                logger.debug("MCP session %s ended with %r", self.spec.label, exc)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=5)
        if not loop.is_running():
            loop.close()
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    def __enter__(self) -> MCPToolset:
        self.connect()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ calls
    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call a server tool from synchronous code; returns the SDK's CallToolResult."""
        if self._loop is None or self._client is None:
            raise ToolError(f"The MCP server {self.spec.label!r} is not connected.")
        if self._failure is not None or (self._main is not None and self._main.done()):
            raise ToolError(f"The MCP server {self.spec.label!r} stopped"
                            f"{': ' + _describe(self._failure) if self._failure else ''}; restart the app or "
                            "check the server.")
        future = asyncio.run_coroutine_threadsafe(
            self._client.call_tool(name, arguments, read_timeout_seconds=self.spec.timeout), self._loop)
        try:
            return future.result(timeout=self.spec.timeout + 5)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ToolError(f"MCP tool {name!r} did not answer within {self.spec.timeout:g}s.") from None
        except ToolError:
            raise
        except Exception as exc:
            raise ToolError(f"Calling MCP tool {name!r} failed: {_describe(exc)}") from exc

    # ------------------------------------------------------------------ internals
    async def _session_main(self, ready: concurrent.futures.Future[list[Any]]) -> None:
        """Own the client session for its whole life (the SDK needs enter and exit in one task)."""
        from mcp import Client

        self._stop = asyncio.Event()
        try:
            async with Client(self._transport(), read_timeout_seconds=self.spec.timeout) as client:
                self._client = client
                tools: list[Any] = []
                cursor = None
                for _page in range(100):
                    listing = await client.list_tools(cursor=cursor)
                    tools.extend(listing.tools)
                    cursor = listing.next_cursor
                    if not cursor:
                        break
                ready.set_result(tools)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            elif not isinstance(exc, asyncio.CancelledError):
                self._failure = exc
                logger.warning("MCP server %s stopped: %s", self.spec.label, _describe(exc))
        finally:
            self._client = None

    def _transport(self) -> Any:
        spec = self.spec
        if spec.url:
            return _http_transport(spec.url, spec.headers)
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(command=spec.command or "", args=list(spec.args), env=spec.env, cwd=spec.cwd)
        return stdio_client(params, errlog=self._errlog)

    def _make_tool(self, remote: Any) -> MCPTool:
        schema = getattr(remote, "input_schema", None) or {}
        inputs, arg_names = schema_to_inputs(schema)
        nullable_props = {arg_names[k] for k, spec in inputs.items()
                          if spec.get("nullable") and arg_names[k] in set(schema.get("required") or [])}
        name = identifier((self.spec.prefix + "_" if self.spec.prefix else "") + remote.name)
        description = (getattr(remote, "description", None) or getattr(remote, "title", None)
                       or f"Tool {remote.name} of MCP server {self.spec.label}.")
        tool_class = type(f"MCPTool_{name}", (MCPTool,), {
            "name": name, "description": description.strip(), "inputs": inputs, "__module__": __name__,
            "requires_approval": self.spec.requires_approval,
            "approval_reason": f"runs on the MCP server {self.spec.label}, whose effects the app cannot see",
        })
        return tool_class(self, remote.name, arg_names, set(schema.get("required") or []), nullable_props)

    def _stderr_tail(self, limit: int = 1500) -> str:
        if self._errlog is None:
            return ""
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            text = self._errlog.read().strip()
        except (OSError, ValueError):
            return ""
        return f" Server stderr (last lines):\n{text[-limit:]}" if text else ""


@asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str] | None) -> AsyncIterator[Any]:
    from mcp.client.streamable_http import streamable_http_client

    if not headers:
        async with streamable_http_client(url) as streams:
            yield streams
        return
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers=headers) as http_client:
        async with streamable_http_client(url, http_client=http_client) as streams:
            yield streams


def _describe(exc: BaseException | None) -> str:
    """A one-line reason, looking inside exception groups for the first real error."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if exc is None:
        return "unknown error"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def load_mcp_toolsets(config: str | None) -> tuple[list[MCPToolset], list[str]]:
    """Connect to every configured server; return the toolsets that worked and an error per failure."""
    toolsets: list[MCPToolset] = []
    errors: list[str] = []
    try:
        specs = parse_mcp_servers(config)
    except ConfigurationError as exc:
        return [], [str(exc)]
    for spec in specs:
        try:
            toolsets.append(MCPToolset(spec))
        except ConfigurationError as exc:
            errors.append(str(exc))
    return toolsets, errors
