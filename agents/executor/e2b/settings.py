"""The E2B backend's settings: which service, which key, which template, how long a sandbox may live.

Why a dataclass handed in and not the environment: the `agents` library reads no variables of its own
(`agents/host_settings.py`); the app maps its E2B settings (AGENTDECK_E2B_TEMPLATE and the others below) and E2B's
own `E2B_API_KEY` onto this and passes it with `configure_host(e2b=...)`, or a program passes it to
`E2BBackend(settings)`. Each field names the app setting that fills it, so an error can say which one to change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: What each field is called where the operator sets it (for messages).
SETTING_NAMES = {
    "api_key": "E2B_API_KEY",
    "template": "AGENTDECK_E2B_TEMPLATE",
    "timeout_s": "AGENTDECK_E2B_TIMEOUT_S",
    "domain": "AGENTDECK_E2B_DOMAIN",
    "api_url": "AGENTDECK_E2B_API_URL",
}


@dataclass(frozen=True)
class E2BSettings:
    """`template`: the E2B template (name or id) built with AgentDeck's sandbox image (the `agents` package and
    the libraries the code may import); E2B's own `base` template lacks them, so there is no default.
    `api_key`: the team's key (E2B_API_KEY). `timeout_s`: how long the service keeps a sandbox alive without the
    app renewing it (each step renews it; an idle chat's sandbox ends itself, so a crashed app leaves nothing
    running past this). `domain`, `api_url`, `sandbox_url`: where the service is (E2B's cloud when None; a
    self-hosted deployment or the tests' loopback stand-in otherwise). `request_timeout_s`: one API call's limit.
    `workdir`: the workspace folder inside the sandbox; `python`: the template's interpreter (the sandbox
    image's). `command`: a shell command line to start instead of the relay and the supervisor (tests).
    `pause_on_suspend`: `suspend()` pauses the sandbox at the service (memory and files kept; no CPU billed)."""

    template: str = ""
    api_key: str | None = None
    timeout_s: int = 3600
    domain: str | None = None
    api_url: str | None = None
    sandbox_url: str | None = None
    request_timeout_s: float = 30.0
    workdir: str = "/home/user/workspace"
    python: str = "/usr/local/bin/python3"
    command: str | None = None
    pause_on_suspend: bool = True

    def __post_init__(self) -> None:
        if not 60 <= self.timeout_s <= 86_400:
            raise ValueError(f"{SETTING_NAMES['timeout_s']} must be 60 to 86400 seconds, not {self.timeout_s!r}")
        if self.request_timeout_s <= 0:
            raise ValueError(f"request_timeout_s must be more than 0, not {self.request_timeout_s!r}")
        if not self.workdir.startswith("/") or "/.." in self.workdir or self.workdir.rstrip("/") == "":
            raise ValueError(f"workdir must be an absolute folder other than /, not {self.workdir!r}")

    def missing(self) -> str | None:
        """What must still be set before a sandbox can start, in a sentence naming the setting; None if nothing."""
        if not self.api_key:
            return f"{SETTING_NAMES['api_key']} is not set (the E2B team's API key)"
        if not self.template.strip():
            return (f"{SETTING_NAMES['template']} is not set (an E2B template built with AgentDeck's sandbox "
                    f"image: E2B's own base template lacks the agents package)")
        return None

    def connection(self) -> dict[str, Any]:
        """The SDK's connection options (`ApiParams`) for these settings. None fields are left out, so the SDK's
        own conventions apply to them (E2B_DOMAIN, else E2B's cloud); debug mode, which skips the service's API
        altogether, is always off."""
        params: dict[str, Any] = {"api_key": self.api_key, "request_timeout": self.request_timeout_s,
                                     "debug": False}
        for name in ("domain", "api_url", "sandbox_url"):
            value = getattr(self, name)
            if value:
                params[name] = value
        return params
