"""An OpenAI-compatible server (vLLM, llama.cpp's server, LM Studio, a company gateway) configured like a provider
key: a base URL, an optional key and the names of the models it serves.

Model strings `openai-compatible:<model name>` reach it (agents/models/loader.py) through litellm's OpenAI
client with the server's address; the string never holds the address, so a visitor choosing among the
operator's models cannot point the app at another host (ui/model_choice.py refuses strings with a URL).

Where the server comes from: `configure_host(compatible_server=CompatibleServer(...))` (the app builds it from its
settings AGENTDECK_OPENAI_BASE_URL, AGENTDECK_OPENAI_API_KEY and AGENTDECK_OPENAI_MODELS: ui/config/models.py), else
the OpenAI SDK's own pair from the environment, OPENAI_BASE_URL with OPENAI_API_KEY (the provider's convention; the
library reads no AGENTDECK_* variable). The key of one source is never sent to the other's address.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from agents.errors import ConfigurationError

PREFIX = "openai-compatible"
BASE_ENV = "AGENTDECK_OPENAI_BASE_URL"
KEY_ENV = "AGENTDECK_OPENAI_API_KEY"
MODELS_ENV = "AGENTDECK_OPENAI_MODELS"
SDK_BASE_ENV = "OPENAI_BASE_URL"
SDK_KEY_ENV = "OPENAI_API_KEY"
#: Sent as the key when the server wants none (the OpenAI client refuses to call without one).
NO_KEY = "not-needed"


@dataclass(frozen=True)
class CompatibleServer:
    base_url: str
    api_key: str | None = field(default=None, repr=False)
    models: tuple[str, ...] = ()
    source: str = BASE_ENV  # the variable the address came from (for messages)

    def model_strings(self) -> list[str]:
        return [f"{PREFIX}:{name}" for name in self.models]


def check_base_url(url: str, variable: str = BASE_ENV) -> str:
    """The URL without a trailing slash; ConfigurationError unless it is http(s) with a host and no user:password."""
    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(f"{variable} must be an http:// or https:// URL such as http://127.0.0.1:8000/v1 "
                                 f"(got {url!r}).")
    if parts.username or parts.password:
        raise ConfigurationError(f"{variable} must not hold a user name or password: put the key in "
                                 f"{KEY_ENV if variable == BASE_ENV else SDK_KEY_ENV}.")
    return url


def operator_server(base_url: str, api_key: str | None, models: tuple[str, ...] | list[str] = ()
                    ) -> CompatibleServer:
    """The operator's server from its settings (`BASE_ENV`, `KEY_ENV`, `MODELS_ENV`); ConfigurationError for an
    address that is not http(s) or holds a password."""
    names = tuple(dict.fromkeys(m.strip() for m in models if m.strip()))
    return CompatibleServer(check_base_url(base_url, BASE_ENV), (api_key or "").strip() or None, names)


def server_from_env(env: Mapping[str, str] | None = None) -> CompatibleServer | None:
    """The configured server: the host setting, else the OpenAI SDK's own `OPENAI_BASE_URL` (with
    `OPENAI_API_KEY`) from `env` (default: the process's environment); None when neither is set."""
    from agents.host_settings import host_settings

    configured = host_settings().compatible_server
    if configured is not None:
        return configured  # type: ignore[no-any-return]
    env = os.environ if env is None else env
    base = (env.get(SDK_BASE_ENV) or "").strip()
    if base:
        return CompatibleServer(check_base_url(base, SDK_BASE_ENV), (env.get(SDK_KEY_ENV) or "").strip() or None,
                                (), SDK_BASE_ENV)
    return None


def require_server(model_name: str, env: Mapping[str, str] | None = None) -> CompatibleServer:
    """The server a `openai-compatible:<model_name>` string needs; ConfigurationError saying what to set."""
    server = server_from_env(env)
    if server is None:
        raise ConfigurationError(f"'{PREFIX}:{model_name}' needs the server's address: set {BASE_ENV} (e.g. "
                                 f"http://127.0.0.1:8000/v1) and, if it wants a key, {KEY_ENV}.")
    if not model_name.strip() or any(ch.isspace() for ch in model_name.strip()):
        raise ConfigurationError(f"'{PREFIX}:{model_name}' does not name a model: write {PREFIX}:<model name>.")
    return server
