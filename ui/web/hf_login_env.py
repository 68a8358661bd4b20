"""Whether this server offers "Sign in with Hugging Face", read from the environment alone.

Kept apart from ui/web/sign_in.py (the page side) so that the configuration (ui/settings.py) can ask without
importing the page: settings sit below the page in the layering (tests/test_layers.py).
"""
from __future__ import annotations

import ipaddress
import logging
import os
from collections.abc import Mapping

LOG = logging.getLogger("agentdeck")
OAUTH_VARIABLES = ("OAUTH_CLIENT_ID", "OAUTH_CLIENT_SECRET", "OAUTH_SCOPES", "OPENID_PROVIDER_URL")


def on_a_space(env: Mapping[str, str] | None = None) -> bool:
    """Running on a Hugging Face Space, as Gradio decides it (its OAuth routes are real only there)."""
    env = os.environ if env is None else env
    return env.get("SYSTEM") == "spaces" and bool(env.get("SPACE_ID"))


def bind_address(env: Mapping[str, str] | None = None) -> str:
    """The address the server listens on as Gradio picks it when launch() names none."""
    env = os.environ if env is None else env
    return (env.get("GRADIO_SERVER_NAME") or "").strip() or "127.0.0.1"


def loopback_only(server_name: str | None) -> bool:
    """Whether a server bound to `server_name` is reachable from this machine alone (127.0.0.0/8, ::1, localhost).
    0.0.0.0, ::, a LAN address or any other name: no."""
    name = (server_name or "127.0.0.1").strip()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def real_oauth_configured(env: Mapping[str, str] | None = None) -> list[str]:
    """The OAuth variables a real Space login lacks (empty: all there). An empty client secret counts as missing:
    Gradio signs its session cookie with a key derived from that secret, and one derived from "" anyone can
    compute, so a cookie forged offline for any Hugging Face name would be accepted."""
    env = os.environ if env is None else env
    return [name for name in OAUTH_VARIABLES if not (env.get(name) or "").strip()]


def hf_login_from_env(env: Mapping[str, str] | None = None) -> bool:
    """Whether the page gets a "Sign in with Hugging Face" button.

    - On a real Space (SYSTEM=spaces, as Gradio decides it) with every OAuth variable `hf_oauth: true` sets, the
      client secret non-empty: Gradio's real login with the Hub.
    - Anywhere else Gradio does not log visitors in at all: it mocks the login with this machine's own Hugging
      Face account, so every visitor who pressed the button became that account (one chat owner for all, runs
      on the owner's token). That mock is used only when asked for explicitly (AGENTDECK_HF_LOGIN=1) on a
      server bound to loopback alone (GRADIO_SERVER_NAME 127.0.0.1, ::1 or localhost), with a token here.
      SPACE_ID alone (a Space's image run on another server) turns nothing on.

    Otherwise the button is left out, with one line in the log saying why."""
    env = os.environ if env is None else env
    if on_a_space(env):
        missing = real_oauth_configured(env)
        if missing:
            LOG.warning("AgentDeck: no Sign in with Hugging Face button: this Space has no %s (add `hf_oauth: true` "
                        "to its README front matter, as spaces.yaml has).", ", ".join(missing))
            return False
        return True
    if not hf_login_asked(env):
        if env.get("SPACE_ID"):
            LOG.warning("AgentDeck: no Sign in with Hugging Face button: SPACE_ID is set but SYSTEM is not 'spaces', "
                        "so this is not a Space and Gradio would only mock the login, making every visitor who "
                        "signs in this machine's own Hugging Face account.")
        return False
    where = bind_address(env)
    if env.get("GRADIO_SHARE", "").strip().lower() in ("1", "true", "yes"):
        where = f"{where} shared through a public link"
    if not loopback_only(where):
        LOG.warning("AgentDeck: no Sign in with Hugging Face button: AGENTDECK_HF_LOGIN=1 mocks the login with this "
                    "machine's own Hugging Face account, so it is only for a server bound to loopback "
                    "(GRADIO_SERVER_NAME=127.0.0.1); this one listens on %s, where every visitor would become that "
                    "account.", where[:60])
        return False
    if not _local_token(env):
        LOG.warning("AgentDeck: no Sign in with Hugging Face button: outside a Space Gradio mocks the login with "
                    "this machine's Hugging Face token, and there is none (set HF_TOKEN or run `hf auth login`).")
        return False
    return True


def _local_token(env: Mapping[str, str]) -> bool:
    """A Hugging Face token on this machine (HF_TOKEN or the saved login); read from disk, no network."""
    if (env.get("HF_TOKEN") or "").strip():
        return True
    try:
        from huggingface_hub import get_token

        return bool(get_token())
    except Exception:
        return False


def hf_login_asked(env: Mapping[str, str]) -> bool:
    """AGENTDECK_HF_LOGIN=1, as the checked settings read it (ui/config/: only 1 turns it on, anything but 1 or 0
    stops the start)."""
    from ui.config.current import settings_of

    return settings_of(env).hf_login
