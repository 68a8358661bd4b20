"""An OpenAI-compatible server (vLLM, llama.cpp's server, LM Studio, a company gateway) configured like a provider
key: a base URL, an optional key and the names of the models it serves.

Model strings `openai-compatible:<model name>` reach it (agents/models/loader.py) through litellm's OpenAI
client with the server's address; the string never holds the address, so a visitor choosing among the
operator's models cannot point the app at another host (ui/model_choice.py refuses strings with a URL).

Environment (the operator's):
  AGENTDECK_OPENAI_BASE_URL   the server's API root, e.g. http://127.0.0.1:8000/v1
  AGENTDECK_OPENAI_API_KEY    its key, if it wants one (sent only to that server)
  AGENTDECK_OPENAI_MODELS     comma-separated model names it serves (offered in the picker; the first is the
                              default model when AGENTDECK_MODEL is not set)
The OpenAI SDK's own pair, OPENAI_BASE_URL with OPENAI_API_KEY, is read when AGENTDECK_OPENAI_BASE_URL is not
set. The key of one variable pair is never sent to the other's address.
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


def server_from_env(env: Mapping[str, str] | None = None) -> CompatibleServer | None:
    """The configured server, or None when no base URL is set."""
    env = os.environ if env is None else env
    models = tuple(dict.fromkeys(m.strip() for m in (env.get(MODELS_ENV) or "").split(",") if m.strip()))
    base = (env.get(BASE_ENV) or "").strip()
    if base:
        return CompatibleServer(check_base_url(base, BASE_ENV), (env.get(KEY_ENV) or "").strip() or None, models)
    base = (env.get(SDK_BASE_ENV) or "").strip()
    if base:
        return CompatibleServer(check_base_url(base, SDK_BASE_ENV), (env.get(SDK_KEY_ENV) or "").strip() or None,
                                models, SDK_BASE_ENV)
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
