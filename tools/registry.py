"""The tool registry: every tool the app can offer — built-in, user files, MCP servers — by name.

Why: the UI lists all tools with their descriptions and lets users switch them on and off, and the
agents get the enabled ones. Constructing the built-in tools touches neither the network nor any
model (they load lazily on first call). User tool files are imported, and configured MCP servers
are started/connected, because that is the only way to learn their tools; failures there are
collected in `ToolCatalog.errors` instead of stopping the app.

Settings come from a `ToolSettings`, a mapping, or any object with the same attribute names (the
app's settings object); missing values fall back to the environment variables below.
"""
from __future__ import annotations

import atexit
import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from agents.tooling.base import Tool
from tools._common import env_flag

logger = logging.getLogger(__name__)

#: The built-in tools, in the order the UI lists them.
BUILTIN_TOOL_NAMES = ("web_search", "visit_webpage", "web_browser", "wikipedia_search", "speech_to_text")


@dataclass
class ToolSettings:
    """What the registry needs to build the tools; `from_env()` reads the AGENTDECK_* variables."""

    allow_private_urls: bool = False            # AGENTDECK_ALLOW_PRIVATE_URLS=1
    wikipedia_url: str | None = None            # AGENTDECK_WIKIPEDIA_URL (may contain {lang})
    stt_model: str | None = None                # AGENTDECK_STT_MODEL (hub id or local folder)
    tools_path: str | None = None               # AGENTDECK_TOOLS_PATH (os.pathsep-separated files/folders)
    mcp_servers: str | None = None              # AGENTDECK_MCP_SERVERS (JSON or ';'-separated, see mcp_client)
    disabled_tools: frozenset[str] = frozenset()  # AGENTDECK_DISABLED_TOOLS (comma-separated names)
    hub_tools: str | None = None                # AGENTDECK_HUB_TOOLS (comma-separated repo ids, each maybe @revision)
    hub_tools_no_approval: frozenset[str] = frozenset()  # AGENTDECK_HUB_TOOLS_NO_APPROVAL (repo ids)
    hub_endpoint: str | None = None             # HF_ENDPOINT (another Hub; huggingface_hub's default otherwise)
    search_region: str = "wt-wt"
    page_max_chars: int = 40_000

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ToolSettings:
        env = os.environ if environ is None else environ
        flag = env_flag("AGENTDECK_ALLOW_PRIVATE_URLS", environ=env)
        disabled = frozenset(n.strip() for n in env.get("AGENTDECK_DISABLED_TOOLS", "").split(",") if n.strip())
        return cls(
            allow_private_urls=flag,
            wikipedia_url=env.get("AGENTDECK_WIKIPEDIA_URL") or None,
            stt_model=env.get("AGENTDECK_STT_MODEL") or None,
            tools_path=env.get("AGENTDECK_TOOLS_PATH") or None,
            mcp_servers=env.get("AGENTDECK_MCP_SERVERS") or None,
            disabled_tools=disabled,
            hub_tools=env.get("AGENTDECK_HUB_TOOLS") or None,
            hub_tools_no_approval=frozenset(_comma_list(env.get("AGENTDECK_HUB_TOOLS_NO_APPROVAL", ""))),
            hub_endpoint=env.get("HF_ENDPOINT") or None,
        )

    @classmethod
    def coerce(cls, settings: Any = None) -> ToolSettings:
        """Accept None (environment), a ToolSettings, a mapping, or an object with matching attributes."""
        if settings is None:
            return cls.from_env()
        if isinstance(settings, ToolSettings):
            return settings
        base = cls.from_env()
        values: dict[str, Any] = {}
        for f in fields(cls):
            if isinstance(settings, Mapping):
                present, value = f.name in settings, settings.get(f.name)
            else:
                present, value = hasattr(settings, f.name), getattr(settings, f.name, None)
            if present and value is not None:
                values[f.name] = frozenset(value) if f.name in _SET_FIELDS else value
        return cls(**{**{f.name: getattr(base, f.name) for f in fields(cls)}, **values})


_SET_FIELDS = ("disabled_tools", "hub_tools_no_approval")


def _comma_list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


@dataclass
class ToolEntry:
    """One tool as the UI shows it."""

    tool: Tool
    source: str          # "builtin", "user:<file>", "mcp:<server>" or "hub:<repo id>"
    enabled: bool = True

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def description(self) -> str:
        return self.tool.description


@dataclass
class ToolCatalog:
    """All known tools, the problems met while loading them, and the MCP connections to close."""

    entries: dict[str, ToolEntry] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    toolsets: list[Any] = field(default_factory=list)

    @property
    def tools(self) -> dict[str, Tool]:
        return {name: entry.tool for name, entry in self.entries.items()}

    def enabled_tools(self) -> dict[str, Tool]:
        return {name: entry.tool for name, entry in self.entries.items() if entry.enabled}

    def set_enabled(self, name: str, enabled: bool) -> None:
        self.entries[name].enabled = enabled

    def describe(self) -> list[dict[str, Any]]:
        """Rows for the UI: name, description, source, enabled, signature."""
        return [{"name": e.name, "description": e.description, "source": e.source, "enabled": e.enabled,
                 "signature": e.tool.signature_text()} for e in self.entries.values()]

    def close(self) -> None:
        for toolset in self.toolsets:
            try:
                toolset.close()
            except Exception:  # pragma: no cover - closing is best effort
                logger.exception("Closing MCP toolset failed")
        self.toolsets.clear()
        host = sys.modules.get("tools.browser_host")
        if host is not None:  # web_browser's Chromium, if it was started (it is also closed at exit)
            host.close_shared()

    def __enter__(self) -> ToolCatalog:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def _add(self, tool: Tool, source: str, disabled: frozenset[str]) -> None:
        if tool.name in self.entries:
            self.errors.append(f"Tool {tool.name!r} from {source} replaces the one from "
                               f"{self.entries[tool.name].source}.")
        self.entries[tool.name] = ToolEntry(tool, source, enabled=tool.name not in disabled)


def local_models_installed() -> bool:
    """Whether transformers and torch are installed (requirements-local.txt), without importing them."""
    import importlib.util

    return all(importlib.util.find_spec(name) is not None for name in ("transformers", "torch"))


def browser_installed() -> bool:
    """Whether Playwright and the system's Chromium are installed (web_browser never downloads a browser)."""
    import importlib.util

    from tools.browser_host import CHROMIUM

    return importlib.util.find_spec("playwright") is not None and os.path.exists(CHROMIUM)


def unavailable_builtin_tools() -> dict[str, str]:
    """The built-in tools this install does not offer, each with why and what would add it: shown where tools are
    chosen (the settings form, `python -m agents --tools`), so a tool the README lists is never silently absent."""
    import importlib.util

    from tools.browser_host import CHROMIUM

    missing: dict[str, str] = {}
    if not browser_installed():
        needs = []
        if importlib.util.find_spec("playwright") is None:
            needs.append("the playwright package (pip install -r requirements-local.txt)")
        if not os.path.exists(CHROMIUM):
            needs.append(f"the system's Chromium at {CHROMIUM} (apt-get install chromium; a downloaded browser is "
                         "never used)")
        missing["web_browser"] = ("needs " + " and ".join(needs) + ". A Hugging Face Space has neither, so it is "
                                  "off there.")
    if not local_models_installed():
        missing["speech_to_text"] = ("needs torch and transformers (requirements-local.txt); a Hugging Face Space "
                                     "installs neither.")
    return missing


def make_builtin_tools(settings: Any = None) -> dict[str, Tool]:
    """Only the built-in tools, freshly constructed (no network, no model loading)."""
    from tools.speech_to_text import SpeechToTextTool
    from tools.visit_webpage import VisitWebpageTool
    from tools.web_browser import WebBrowserTool
    from tools.web_search import WebSearchTool
    from tools.wikipedia_search import WikipediaSearchTool

    s = ToolSettings.coerce(settings)
    built: list[Tool] = [
        WebSearchTool(region=s.search_region),
        VisitWebpageTool(allow_private=s.allow_private_urls, max_chars=s.page_max_chars),
        WikipediaSearchTool(base_url=s.wikipedia_url, max_chars=s.page_max_chars),
    ]
    if browser_installed():  # Playwright: requirements-local.txt (not a Space's); Chromium comes from apt
        built.insert(2, WebBrowserTool(allow_private=s.allow_private_urls))
    if local_models_installed():  # a lean install (a Space) has no torch: never offer a tool that cannot run
        built.append(SpeechToTextTool(model_id=s.stt_model))
    return {tool.name: tool for tool in built}


def load_tool_catalog(settings: Any = None, *, include_mcp: bool = True) -> ToolCatalog:
    """Built-in tools, then user tools (AGENTDECK_TOOLS_PATH), then Hub tools (AGENTDECK_HUB_TOOLS), then MCP
    tools (AGENTDECK_MCP_SERVERS)."""
    from tools.user_tools import load_user_tools

    s = ToolSettings.coerce(settings)
    catalog = ToolCatalog()
    for tool in make_builtin_tools(s).values():
        catalog._add(tool, "builtin", s.disabled_tools)
    if s.tools_path:
        loaded = load_user_tools(s.tools_path)
        catalog.errors.extend(loaded.errors)
        for name, tool in loaded.tools.items():
            catalog._add(tool, f"user:{loaded.sources[name]}", s.disabled_tools)
    if s.hub_tools:
        for tool, source in load_hub_tools(s, catalog.errors):
            catalog._add(tool, source, s.disabled_tools)
    if include_mcp and s.mcp_servers:
        from tools.mcp_client import load_mcp_toolsets

        toolsets, errors = load_mcp_toolsets(s.mcp_servers)
        catalog.errors.extend(errors)
        catalog.toolsets.extend(toolsets)
        for toolset in toolsets:
            _OPEN_TOOLSETS.append(toolset)
            for tool in toolset.tools:
                catalog._add(tool, f"mcp:{toolset.spec.label}", s.disabled_tools)
    for error in catalog.errors:
        logger.warning("Tool loading: %s", error)
    return catalog


def load_hub_tools(settings: ToolSettings, errors: list[str]) -> list[tuple[Tool, str]]:
    """The tools of the Hub repos the operator listed (`repo_id` or `repo_id@revision`, comma-separated). Listing
    a repo is the operator's trust in its code; its calls pause for approval unless the repo is also listed in
    AGENTDECK_HUB_TOOLS_NO_APPROVAL. A repo that fails to load is reported and the others still load."""
    from agents.sharing.hub import HubOptions
    from agents.sharing.hub_loading import tool_from_hub

    loaded: list[tuple[Tool, str]] = []
    for entry in _comma_list(settings.hub_tools or ""):
        repo_id, _, revision = entry.partition("@")
        try:
            tool = tool_from_hub(repo_id, trust_remote_code=True,
                                 requires_approval=repo_id not in settings.hub_tools_no_approval,
                                 options=HubOptions(endpoint=settings.hub_endpoint, revision=revision or None))
        except Exception as exc:  # one repo's failure must not stop the app or the other tools
            errors.append(f"Hub tool {entry} (AGENTDECK_HUB_TOOLS): {type(exc).__name__}: {exc}")
            continue
        loaded.append((tool, f"hub:{repo_id}"))
    return loaded


def all_tools(settings: Any = None) -> dict[str, Tool]:
    """Every available tool by name: built-in, user and MCP tools (MCP sessions close at exit).

    Use `load_tool_catalog` instead when you also need the loading errors, sources and on/off state.
    """
    return load_tool_catalog(settings).tools


_OPEN_TOOLSETS: list[Any] = []


@atexit.register
def _close_open_toolsets() -> None:  # pragma: no cover - runs at interpreter exit
    while _OPEN_TOOLSETS:
        try:
            _OPEN_TOOLSETS.pop().close()
        except Exception:
            pass
