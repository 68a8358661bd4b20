"""The settings as the rest of the app reads them: `current_settings()` (the process's environment) and
`settings_of(env)` (a given mapping, for code that takes one to be testable).

Why: a module that read its own `AGENTDECK_*` variable with `os.environ.get` parsed it its own way (a bad
`AGENTDECK_MAX_FILES_PER_MESSAGE` was a traceback at import, before the start-up check could name it; a bad
`AGENTDECK_MAX_PUBLISHED_MB` fell back to a default in silence). Every reader now gets the one checked object.
It is cached per value of the `AGENTDECK_*` variables, so a server that never changes them validates once, and a
test that sets one sees it.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from ui.config.app_settings import AppSettings, _problem, fields, load_settings
from ui.config.base import PREFIX, SettingsError, env_name

_lock = threading.Lock()
_cache: dict[tuple[tuple[str, str], ...], AppSettings] = {}


def _snapshot(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((name, value) for name, value in env.items() if name.startswith(PREFIX)))


def current_settings() -> AppSettings:
    """The app's settings from this process's environment (checked: a bad value raises `SettingsError` naming
    the variable, as at start-up)."""
    key = _snapshot(os.environ)
    with _lock:
        found = _cache.get(key)
    if found is None:
        found = load_settings()
        with _lock:
            if len(_cache) > 64:  # tests change variables often; a server never does
                _cache.clear()
            _cache[key] = found
    return found


class _OnlyGiven(AppSettings):
    """The settings from the values passed to it alone (never the process's environment)."""

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)


def settings_of(env: Mapping[str, str] | None = None) -> AppSettings:
    """The settings `env` holds (its `AGENTDECK_*` entries, checked as the environment's are), or, for None, the
    process's (`current_settings()`)."""
    if env is None or env is os.environ:
        return current_settings()
    values: dict[str, Any] = {name: env[env_name(name)] for name, _ in fields() if env_name(name) in env}
    try:
        return _OnlyGiven(**values)
    except ValidationError as exc:
        raise SettingsError([_problem(dict(error)) for error in exc.errors()]) from None
