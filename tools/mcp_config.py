"""Configuration of MCP servers: `MCPServerSpec` and the AGENTDECK_MCP_SERVERS parser.

The variable holds either
- JSON: a list of server objects, a single object, or a Claude-Desktop-style
  `{"mcpServers": {"name": {...}}}` map; a server object is `{"command": "...", "args": [...],
  "env": {...}, "cwd": "..."}` for a stdio server or `{"url": "https://.../mcp", "headers": {...}}`
  for a Streamable HTTP server, optionally with `"name"` (used as a tool-name prefix, see
  `prefix`), `"timeout"` (seconds per call) and `"requires_approval"` (default true); or
- plain text: entries separated by `;`, each an http(s) URL or a shell-style command line,
  e.g. `uvx mcp-server-time; https://example.com/mcp`.
"""
from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from agents.errors import ConfigurationError

MCP_SERVERS_ENV = "AGENTDECK_MCP_SERVERS"


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
    #: The app cannot see what a server's tools do, so "approve sensitive tool calls" pauses for them; an
    #: operator who knows a server only reads can say `"requires_approval": false`.
    requires_approval: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.requires_approval, bool):
            raise ConfigurationError(f"MCP server `requires_approval` must be true or false, not "
                                     f"{self.requires_approval!r}.")
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
    def from_dict(cls, data: dict[str, Any], name: str | None = None) -> MCPServerSpec:
        known = {"command", "args", "env", "cwd", "url", "headers", "name", "prefix", "timeout", "requires_approval"}
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
    parts: list[str] = []
    current: list[str] = []
    quote = ""
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
