"""Who calls an API endpoint, told apart as the page tells its visitors apart.

The page keeps a browser's chats under its sign-in (a password user, a Hugging Face user) or else under the
browser's random token. An API client has no browser storage, so an anonymous caller's chats belong to a token
of its own, sent as `Authorization: Bearer <64 hex digits>` (the same token reaches the same chats from any
client; a browser's own token reaches that browser's chats, as the page's state does), and without one to its
Gradio session (one `gradio_client.Client`). The visitor for the run limits is the address, as for the page.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from ui.saved.store import ChatStore, valid_token
from ui.web.rate_limit import visitor_of

_BEARER = re.compile(r"^Bearer\s+(\S{1,512})\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class ApiCaller:
    owner: str  # whose saved chats (ui/saved/store.py owner key)
    visitor: str  # whose limits (ui/web/rate_limit.py)
    request: Any = field(default=None, repr=False, compare=False)  # the gr.Request (root URL, limits)
    hf_token: Any = field(default=None, repr=False, compare=False)  # a signed-in visitor's gr.OAuthToken


def bearer_token(request: Any) -> str | None:
    """A caller's own chat token from `Authorization: Bearer <64 hex>`, or None (any other value: a Hugging
    Face token for the Space, a password login's access token, garbage)."""
    headers = getattr(request, "headers", None)
    try:
        value = str(headers.get("authorization", "") or "") if headers is not None else ""
    except Exception:  # a headers object of an unusual kind: no token
        return None
    found = _BEARER.match(value)
    token = found.group(1).lower() if found else None
    return token if valid_token(token) else None


def identify(request: Any, store: ChatStore, profile: Any = None, hf_token: Any = None) -> ApiCaller:
    """The caller of one API event: the signed-in Hugging Face user (`profile`), the password user, a bearer
    token's owner, else its Gradio session's."""
    hf_user = getattr(profile, "username", None) if profile is not None else None
    username = f"hf:{hf_user}" if hf_user else getattr(request, "username", None)
    if username:
        owner = store.owner_for_user(str(username))
    elif (token := bearer_token(request)) is not None:
        owner = store.owner_for_token(token)
    else:
        session_hash = str(getattr(request, "session_hash", None) or "anonymous")
        # A token of its own (never a browser's: that would need the browser's secret), made from the session.
        owner = store.owner_for_token(hashlib.sha256(b"agentdeck-api-session\0" + session_hash.encode()).hexdigest())
    return ApiCaller(owner=owner, visitor=visitor_of(request), request=request, hf_token=hf_token)
