"""The tools' settings: which tools exist beyond the built-in ones, and how the built-in ones reach outside."""
from __future__ import annotations

from ui.config.base import CommaList, SettingsPart, Switch01, setting


class ToolSettingsPart(SettingsPart):
    tools_path: str = setting("", "your own tool files or folders", accepts="paths separated by `:`")
    mcp_servers: str = setting("", "MCP servers whose tools are offered", accepts="a JSON list or `;`-separated "
                                                                                 "commands (see Tools)")
    disabled_tools: CommaList = setting((), "tools to hide")
    hub_tools: str = setting("", "tool repos on the Hugging Face Hub loaded at start-up",
                             accepts="comma-separated `user/tool` or `user/tool@revision`")
    hub_tools_no_approval: CommaList = setting((), "those Hub tool repos whose calls need no approval")
    allow_private_urls: Switch01 = setting(False, "let the web tools reach private and loopback addresses (single-user "
                                              "or local installs)")
    user_agent: str = setting("", "the User-Agent of the tools' requests (Wikimedia asks for a contact)",
                              accepts="text", default_text="AgentDeck/0.1 (...)")
    wikipedia_url: str = setting("", "the Wikipedia API base URL (may contain {lang})", accepts="a URL",
                                 default_text="https://{lang}.wikipedia.org")
    stt_model: str = setting("", "the speech-to-text model", accepts="a Hub id or a folder",
                             default_text="openai/whisper-tiny")
