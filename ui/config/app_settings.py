"""`AppSettings`: every `AGENTDECK_*` variable the app reads, typed and checked once at start-up.

Why: a bad value (`AGENTDECK_MAX_STEPS=abc`, out of range, an unknown choice) used to fall back to a default in
silence, somewhere in one of thirty modules. `load_settings()` reads them all here and raises `SettingsError`
naming each bad variable, what it got and what it accepts; `python app.py` prints that and stops. The `agents`
library reads none of them: the app passes what it needs as parameters (ui/agent_factory.py, ui/server.py).
"""
from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import Any

from pydantic import SecretStr, ValidationError
from pydantic.fields import FieldInfo

from ui.config.base import PREFIX, SettingsError, SettingsPart, accepts, env_name
from ui.config.limits import LimitSettings
from ui.config.models import ModelSettings
from ui.config.sandbox import SandboxSettings
from ui.config.server import ServerSettings
from ui.config.tools import ToolSettingsPart
from ui.config.uploads import UploadSettings

#: The parts in the order the README's table lists them, each with its heading.
PARTS: tuple[tuple[str, type[SettingsPart]], ...] = (
    ("Models", ModelSettings), ("Sandbox", SandboxSettings), ("Runs and visitors", LimitSettings),
    ("Uploads, messages and disk", UploadSettings), ("Server", ServerSettings), ("Tools", ToolSettingsPart))

#: Variables with the prefix that are not settings of the app: its test suite's own.
NOT_SETTINGS = frozenset({"AGENTDECK_TEST_SECRET", "AGENTDECK_TEST_CACHE", "AGENTDECK_SCREENSHOT_DIR"})

log = logging.getLogger("ui.config")


class AppSettings(ModelSettings, SandboxSettings, LimitSettings, UploadSettings, ServerSettings, ToolSettingsPart):
    """The app's settings, one field per `AGENTDECK_<FIELD>` variable (see the parts for each one's meaning)."""


def fields() -> Iterator[tuple[str, FieldInfo]]:
    """Every setting's field name and definition, part by part."""
    for _, part in PARTS:
        yield from part.model_fields.items()


def variable_names() -> list[str]:
    return [env_name(name) for name, _ in fields()]


def _shown(value: Any, secret: bool) -> str:
    if secret:
        return f"a hidden value of {len(str(value))} characters"
    text = repr(value) if isinstance(value, str) else repr(str(value))
    return text if len(text) <= 80 else text[:77] + "...'"


def _problem(error: dict[str, Any]) -> str:
    name = str(error["loc"][0]) if error.get("loc") else ""
    info = AppSettings.model_fields.get(name)
    if info is None:
        return str(error.get("msg", "invalid value"))
    kind = info.annotation
    secret = kind is SecretStr or "SecretStr" in str(kind)
    got = _shown(os.environ.get(env_name(name), error.get("input")), secret)
    # A check of our own says why (an unknown backend); pydantic's words for a type or range say what `accepts`
    # says better (and call a secret's characters "items").
    reason = str(error.get("msg", "")).removeprefix("Value error, ") if error.get("type") == "value_error" else ""
    return (f"{env_name(name)} is {got}, which it does not accept{f' ({reason})' if reason else ''}; "
            f"it accepts {accepts(info)}.")


def load_settings(**overrides: Any) -> AppSettings:
    """The settings from the environment (`overrides` by field name win over it), or `SettingsError` naming every
    bad variable. Variables with the prefix that name no setting are logged: a typo would be ignored otherwise."""
    try:
        settings = AppSettings(**overrides)
    except ValidationError as exc:
        raise SettingsError([_problem(dict(error)) for error in exc.errors()]) from None
    known = set(variable_names()) | NOT_SETTINGS
    unknown = sorted(name for name in os.environ if name.startswith(PREFIX) and name not in known)
    if unknown:
        log.warning("AgentDeck: %s name no setting and are ignored (the settings are listed in README.md's "
                    "Configuration).", ", ".join(unknown))
    return settings
