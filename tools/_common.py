"""Small helpers shared by the built-in tools: settings from the environment and text truncation.

Kept free of third-party imports so every tool module stays cheap to import.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

#: Sent by the HTTP tools. Wikimedia asks clients to identify themselves with a way to reach the operator;
#: deployments should set AGENTDECK_USER_AGENT to something with their contact URL or e-mail.
DEFAULT_USER_AGENT = "AgentDeck/0.1 (LLM agent workbench; set AGENTDECK_USER_AGENT to add a contact) python-requests"

_TRUE = {"1", "true", "yes", "on"}


def env_flag(name: str, default: bool = False, environ: Mapping[str, str] | None = None) -> bool:
    """Read a boolean environment variable (`1`, `true`, `yes`, `on` mean true) from `environ` (the process's)."""
    value = (os.environ if environ is None else environ).get(name)
    if value is None or not value.strip():
        return default
    return value.strip().lower() in _TRUE


_configured_user_agent: str | None = None


def configure_user_agent(value: str | None) -> None:
    """Set the User-Agent of every built-in tool's requests in this process (the app passes its checked
    AGENTDECK_USER_AGENT, ui/config/apply.py); None or blank: the default. Process-wide because the shared browser
    (tools/browser_host.py) serves every session."""
    global _configured_user_agent
    _configured_user_agent = (value or "").strip() or None


def user_agent() -> str:
    """The User-Agent for outgoing requests: the one configured, else the default (never read from the
    environment: the app's settings are checked in one place, ui/config/)."""
    return _configured_user_agent or DEFAULT_USER_AGENT


def truncate(text: str, max_chars: int, hint: str = "") -> str:
    """Cut `text` to `max_chars` and say how much was cut, so the model knows the page went on."""
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    cut = len(text) - max_chars
    extra = " " + hint if hint else ""
    note = f"\n\n[... truncated: showing the first {max_chars:,} of {len(text):,} characters ({cut:,} cut).{extra}]"
    return text[:max_chars] + note
