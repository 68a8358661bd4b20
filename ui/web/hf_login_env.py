"""Whether this server offers "Sign in with Hugging Face", read from the environment alone.

Kept apart from ui/web/sign_in.py (the page side) so that the configuration (ui/settings.py) can ask without
importing the page: settings sit below the page in the layering (tests/test_layers.py).
"""
from __future__ import annotations

import logging
import os
from collections.abc import Mapping

LOG = logging.getLogger("agentdeck")
OAUTH_VARIABLES = ("OAUTH_CLIENT_ID", "OAUTH_CLIENT_SECRET", "OAUTH_SCOPES", "OPENID_PROVIDER_URL")


def on_a_space(env: Mapping[str, str] | None = None) -> bool:
    """Running on a Hugging Face Space, as Gradio decides it (its OAuth routes are real only there)."""
    env = os.environ if env is None else env
    return env.get("SYSTEM") == "spaces" and bool(env.get("SPACE_ID"))


def hf_login_from_env(env: Mapping[str, str] | None = None) -> bool:
    """Whether the page gets a "Sign in with Hugging Face" button: on a Space with OAuth turned on, or locally
    (AGENTDECK_HF_LOGIN=1, or SPACE_ID outside a Space) when Gradio's mocked login can work, i.e. this machine
    has a Hugging Face token. Otherwise the button is left out, with one line in the log."""
    env = os.environ if env is None else env
    if on_a_space(env):
        missing = [name for name in OAUTH_VARIABLES if not env.get(name)]
        if missing:
            LOG.warning("AgentDeck: no Sign in with Hugging Face button: this Space has no %s (add `hf_oauth: true` "
                        "to its README front matter, as spaces.yaml has).", ", ".join(missing))
            return False
        return True
    if not (env.get("SPACE_ID") or env.get("AGENTDECK_HF_LOGIN", "") == "1"):
        return False
    if not _local_token(env):
        where = ("SPACE_ID is set but SYSTEM is not 'spaces', so this is not a Space to Gradio" if env.get("SPACE_ID")
                 else "outside a Space")
        LOG.warning("AgentDeck: no Sign in with Hugging Face button: %s; Gradio mocks the login with this machine's "
                    "Hugging Face token, and there is none (set HF_TOKEN or run `hf auth login`).", where)
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
