"""Load the tools of Model Context Protocol (MCP) servers as regular AgentDeck tools.

Why it is built this way: the agent loop is synchronous but the official `mcp` SDK is async, and an
MCP client session must be entered and left in the same task. So each `MCPToolset` owns one
background thread running its own event loop, with one long-lived task that holds the session open;
tool calls are submitted to that loop with `asyncio.run_coroutine_threadsafe` and waited for with a
timeout. Each server tool becomes a `Tool` whose inputs are mapped from its JSON schema (required
properties are not nullable, the others are).

Configuration (AGENTDECK_MCP_SERVERS), parsed by `parse_mcp_servers`, is either
- JSON: a list of server objects, a single object, or a Claude-Desktop-style
  `{"mcpServers": {"name": {...}}}` map; a server object is `{"command": "...", "args": [...],
  "env": {...}, "cwd": "..."}` for a stdio server or `{"url": "https://.../mcp", "headers": {...}}`
  for a Streamable HTTP server, optionally with `"name"` (used as a tool-name prefix, see
  `prefix`) and `"timeout"` (seconds per call); or
- plain text: entries separated by `;`, each an http(s) URL or a shell-style command line,
  e.g. `uvx mcp-server-time; https://example.com/mcp`.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import keyword
import logging
import re
import shlex
import tempfile
import threading
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

from agents.errors import ConfigurationError, ToolError
from tools.base import Tool

logger = logging.getLogger(__name__)

MCP_SERVERS_ENV = "AGENTDECK_MCP_SERVERS"
_JSON_TO_TOOL_TYPE = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean",
                      "array": "array", "object": "object", "null": "null"}


@dataclass
class MCPServerSpec:
    """How to reach one MCP server: a stdio `command` (+ args, env, cwd) or a Streamable HTTP `url`."""

    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    name: str | None = None
    prefix: str | None = None
    timeout: float = 60.0

    def __post_init__(self) -> None:
        if bool(self.command) == bool(self.url):
            raise ConfigurationError("An MCP server needs either a `command` (stdio) or a `url` (HTTP), not both.")
        if self.url and not self.url.startswith(("http://", "https://")):
            raise ConfigurationError(f"MCP server URL {self.url!r} must start with http:// or https://.")

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        return self.url or " ".join([self.command or "", *self.args]).strip()

    @classmethod
    def from_dict(cls, data: dict[str, Any], name: str | None = None) -> "MCPServerSpec":
        known = {"command", "args", "env", "cwd", "url", "headers", "name", "prefix", "timeout"}
        unknown = sorted(set(data) - known - {"type", "transport"})
        if unknown:
            raise ConfigurationError(f"MCP server entry has unknown key(s) {unknown}; known keys: {sorted(known)}.")
        values = {k: v for k, v in data.items() if k in known}
        if name and not values.get("name"):
            values["name"] = name
        if isinstance(values.get("args"), str):
            values["args"] = shlex.split(values["args"])
        return cls(**values)


def parse_mcp_servers(config: str | None) -> list[MCPServerSpec]:
    """Parse the AGENTDECK_MCP_SERVERS format (see the module docstring) into server specs."""
    text = (config or "").strip()
    if not text:
        return []
    if text[0] in "[{":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"{MCP_SERVERS_ENV} looks like JSON but does not parse: {exc}.") from exc
        if isinstance(data, dict) and isinstance(data.get("mcpServers"), dict):
            return [MCPServerSpec.from_dict(v, name=k) for k, v in data["mcpServers"].items()]
        if isinstance(data, dict):
            data = [data]
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            raise ConfigurationError(f"{MCP_SERVERS_ENV} JSON must be a list of server objects.")
        return [MCPServerSpec.from_dict(item) for item in data]
    specs = []
    for entry in (part.strip() for part in _split_outside_quotes(text, ";")):
        if not entry:
            continue
        if entry.startswith(("http://", "https://")):
            specs.append(MCPServerSpec(url=entry))
            continue
        try:
            words = shlex.split(entry)
        except ValueError as exc:
            raise ConfigurationError(f"{MCP_SERVERS_ENV}: cannot parse command {entry!r} ({exc}).") from exc
        specs.append(MCPServerSpec(command=words[0], args=words[1:]))
    return specs


def _split_outside_quotes(text: str, separator: str) -> list[str]:
    """Split on `separator` except inside single or double quotes (so `python -c 'a; b'` stays whole)."""
    parts, current, quote = [], [], ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == separator:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


# ---------------------------------------------------------------------- schema mapping
def schema_to_inputs(schema: dict[str, Any] | None) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Map a tool's JSON input schema to Tool `inputs`; also return {python name: schema property name}."""
    schema = schema or {}
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    inputs: dict[str, dict[str, Any]] = {}
    names: dict[str, str] = {}
    for prop_name, prop in properties.items():
        prop = prop if isinstance(prop, dict) else {}
        types, allows_null = _json_schema_types(prop)
        description = prop.get("description") or prop.get("title") or prop_name
        if "default" in prop and prop["default"] is not None:
            description += f" (default: {json.dumps(prop['default'])})"
        spec: dict[str, Any] = {"type": types[0] if len(types) == 1 else types, "description": description}
        if prop_name not in required or allows_null:
            spec["nullable"] = True
        if isinstance(prop.get("enum"), list):
            spec["enum"] = [v for v in prop["enum"] if v is not None]
        if isinstance(prop.get("items"), dict):
            spec["items"] = prop["items"]
        python_name = _identifier(prop_name, taken=set(inputs))
        inputs[python_name] = spec
        names[python_name] = prop_name
    return inputs, names


def _json_schema_types(prop: dict[str, Any]) -> tuple[list[str], bool]:
    """The tool types a JSON-schema property allows (["any"] when unknown), and whether it allows null."""
    raw = _raw_json_types(prop)
    types: list[str] = []
    for item in raw:
        mapped = _JSON_TO_TOOL_TYPE.get(item, "any") if isinstance(item, str) else "any"
        if mapped != "null" and mapped not in types:
            types.append(mapped)
    if not types or "any" in types:
        types = ["any"]
    return types, "null" in raw


def _raw_json_types(prop: dict[str, Any]) -> list[Any]:
    """JSON type names of a property, following anyOf/oneOf; "any" for a member with no type."""
    raw: list[Any] = []
    if "type" in prop:
        raw.extend(prop["type"] if isinstance(prop["type"], list) else [prop["type"]])
    for key in ("anyOf", "oneOf"):
        for member in prop.get(key) or []:
            if isinstance(member, dict):
                raw.extend(_raw_json_types(member) or ["any"])
    if not raw and isinstance(prop.get("enum"), list):
        raw = sorted({_python_json_type(v) for v in prop["enum"]})
    return raw


def _python_json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "null" if value is None else "string"


def _identifier(text: str, taken: set[str] = frozenset()) -> str:  # type: ignore[assignment]
    name = re.sub(r"\W", "_", text) or "arg"
    if name[0].isdigit():
        name = "_" + name
    if keyword.iskeyword(name):
        name += "_"
    base, n = name, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name


# ---------------------------------------------------------------------- tools
class MCPTool(Tool):
    """A tool served by an MCP server; calls go through the owning MCPToolset's session."""

    output_type = "string"

    def __init__(self, toolset: "MCPToolset", remote_name: str, arg_names: dict[str, str],
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

    def __enter__(self) -> "MCPToolset":
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
        name = _identifier((self.spec.prefix + "_" if self.spec.prefix else "") + remote.name)
        description = (getattr(remote, "description", None) or getattr(remote, "title", None)
                       or f"Tool {remote.name} of MCP server {self.spec.label}.")
        tool_class = type(f"MCPTool_{name}", (MCPTool,), {
            "name": name, "description": description.strip(), "inputs": inputs, "__module__": __name__,
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
