"""Who calls the MCP endpoint, told the way the page tells its visitors apart.

Why its own module: the endpoint is not one of Gradio's routes, so nothing of Gradio's sign-in reaches it; the
same proofs are read here from the request. With a password (AGENTDECK_USERNAME/PASSWORD) a caller must show
the access token Gradio's `/login` hands out (its cookie, or the same value as `Authorization: Bearer`), or
nothing is served. With "Sign in with Hugging Face" a caller may send the page's session cookie: their chats are
then kept under their name and their hf: models run with their token (without it, as on the page, only models
that need no sign-in run). Otherwise a caller is anonymous: their chats belong to a bearer token of their own
(64 hex digits, like the page's browser token: the same token reaches the same chats), else to their MCP session
(clients of the 2025 protocol; the current one has no sessions, so its clients need the token).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from ui.saved.store import ChatStore, valid_token
from ui.settings import AppConfig
from ui.web.gradio_callers import hf_signed_in, password_user
from ui.web.rate_limit import visitor_of

_BEARER = re.compile(r"^Bearer\s+(\S{1,512})\s*$", re.IGNORECASE)

SIGN_IN_NEEDED = ("This server requires sign-in. POST your username and password to /login (a form: username, "
                  "password) and send the access-token cookie it sets, or its value as `Authorization: Bearer "
                  "<value>`, with every MCP request.")

NAME_YOUR_CHATS = ("Send `Authorization: Bearer <64 hex digits>`, a random token of your own (for example from "
                   "Python's secrets.token_hex(32)): your chats on this server are kept under it, and only a request "
                   "with the same token reaches them.")


class SignInRequired(Exception):
    """The app requires sign-in and the request carries no valid proof of it."""


@dataclass(frozen=True)
class Caller:
    owner: str  # whose saved chats (ui/saved/store.py owner key)
    visitor: str  # whose limits (ui/web/rate_limit.py: the address, as for the page)
    username: str | None = None  # the signed-in name, if any
    hf_token: str | None = field(default=None, repr=False)  # a Hugging Face sign-in's token, for hf: models


def bearer_of(headers: Any) -> str | None:
    """The bearer token of an Authorization header, or None."""
    found = _BEARER.match(str(headers.get("authorization", "") or "")) if headers is not None else None
    return found.group(1) if found else None


def check_signed_in(scope: Any, config: AppConfig) -> None:
    """SignInRequired unless the app needs no password or the request shows a valid access token."""
    if config.auth is None:
        return
    from starlette.datastructures import Headers

    if password_user(scope, bearer_of(Headers(scope=scope))) is None:
        raise SignInRequired(SIGN_IN_NEEDED)


def identify(request: Any, config: AppConfig, store: ChatStore) -> Caller:
    """The caller of one MCP request (`request`: the Starlette request the tool call came in)."""
    scope = request.scope
    bearer = bearer_of(request.headers)
    visitor = visitor_of(request)
    if config.auth is not None:
        user = password_user(scope, bearer)
        if user is None:
            raise SignInRequired(SIGN_IN_NEEDED)
        return Caller(store.owner_for_user(user), visitor, username=user)
    if config.hf_login:
        signed = hf_signed_in(scope)
        if signed is not None:
            name, token = signed
            return Caller(store.owner_for_user(f"hf:{name}"), visitor, username=name, hf_token=token)
    if bearer is not None and valid_token(bearer):
        return Caller(store.owner_for_token(bearer), visitor)
    session_id = str(request.headers.get("mcp-session-id", "") or "")
    if not session_id:  # the current protocol has no sessions: nothing else tells this caller's chats apart
        raise SignInRequired(NAME_YOUR_CHATS)
    token = hashlib.sha256(f"agentdeck-mcp-session:{session_id}".encode()).hexdigest()
    return Caller(store.owner_for_token(token), visitor)
