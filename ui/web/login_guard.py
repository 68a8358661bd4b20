"""The last check before Gradio attaches its login routes (it does whenever a `gr.LoginButton` is on the page).

Why a check at launch besides the button's own rule (ui/web/hf_login_env.py): the page may be built in code with
`hf_login=True`, or served on another address than the environment names. Outside a Space Gradio mocks the login
with this machine's Hugging Face account and signs its session cookie with a key derived from the OAuth client
secret, which there is empty: the key is `sha256("-v4")`, so anyone could forge a signed-in cookie for any name
offline. So the mock is served only on a loopback-only server the operator asked it for, and then with a key
nobody knows; a real Space needs a real secret.
"""
from __future__ import annotations

import os
import secrets
from collections.abc import Mapping

from agents.errors import ConfigurationError
from ui.web.hf_login_env import bind_address, hf_login_asked, loopback_only, on_a_space


def guard_login_routes(expects_oauth: bool, server_name: str | None = None,
                       env: Mapping[str, str] | None = None, share: bool | None = None) -> None:
    """Refuse to serve a login that would not tell visitors apart; give the local mock a secret session key.
    `server_name`: the address launch() binds (None: Gradio's default, GRADIO_SERVER_NAME or 127.0.0.1);
    `share`: launch()'s (None: GRADIO_SHARE), a public tunnel to a loopback server is no loopback-only server."""
    if not expects_oauth:
        return  # no login routes, no session middleware: a session cookie is not even read
    import gradio.oauth

    env = os.environ if env is None else env
    if on_a_space(env):
        if not (gradio.oauth.OAUTH_CLIENT_SECRET or "").strip():
            raise ConfigurationError(
                "Sign in with Hugging Face is on, but this Space has no OAUTH_CLIENT_SECRET: Gradio would sign "
                "session cookies with a key anyone can compute. Add `hf_oauth: true` to the Space's README front "
                "matter, or leave the sign-in off.")
        return
    where = server_name or bind_address(env)
    if share is None:
        share = env.get("GRADIO_SHARE", "").strip().lower() in ("1", "true", "yes")
    if share:
        where = f"{where} shared through a public link"
    if not hf_login_asked(env) or share or not loopback_only(where):
        raise ConfigurationError(
            f"Sign in with Hugging Face is on outside a Space, on {where[:60]}: Gradio would only mock it, making "
            "every visitor this machine's own Hugging Face account. The mock is for AGENTDECK_HF_LOGIN=1 on a server "
            "bound to loopback (127.0.0.1); elsewhere run on a Space with `hf_oauth: true`, or leave it off.")
    # Gradio derives the mock's cookie key from this (empty) value when it attaches the routes: a random one per
    # process means a cookie is only ever one this server signed (a restart signs everyone out).
    gradio.oauth.OAUTH_CLIENT_SECRET = secrets.token_urlsafe(32)

