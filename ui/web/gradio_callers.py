"""Gradio internals for callers that are not the page: the API's own endpoints (ui/api/: the page's events hidden
from the API page, the API's described, sign-in read from the request, absolute file URLs) and who signed in, read
from a request that did not go through Gradio's routes (the MCP endpoint: ui/mcp/). Split out of gradio_compat.py;
written for the same Gradio versions (checked at start-up there)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote, urlsplit

from gradio.utils import get_function_params

from ui.web.gradio_compat import FILE_ROUTE, LOG, file_url, root_url_of  # noqa: F401


# ----- the API (ui/api/) -----------------------------------------------------------------------------------
def hide_from_api(blocks: Any, keep: set[str]) -> list[str]:
    """Every public event of `blocks` whose API name is not in `keep` left out of the API page and of `/info`
    (`api_visibility="undocumented"`); returns the names hidden. They stay callable as before (the page calls
    them, and so do tools and tests that drive the page's events by name): this changes what the API offers,
    never who can reach what. Events that were private stay private.

    Why: Gradio offers every event of a page as an endpoint: the page's own handlers with their component
    tuples (`value_56`, a 15-element `/run`) filled the API page; the API's own endpoints are in ui/api/."""
    hidden = []
    for fn in blocks.fns.values():
        if fn.api_name in keep or fn.api_visibility != "public":
            continue
        fn.api_visibility = "undocumented"
        hidden.append(str(fn.api_name))
    return hidden


def describe_api(blocks: Any, api_name: str, parameters: dict[str, str], returns: list[tuple[str, str]]) -> None:
    """Name and describe the inputs and outputs of an endpoint made by `gr.api` (which labels them "1st",
    "2nd"...): each input by its parameter's name with `parameters[name]`, each output as `returns` says.
    Call inside the Blocks, before the page's config is made (it carries the labels)."""
    fn = next(fn for fn in blocks.fns.values() if fn.api_name == api_name)
    names = [name for name, *_ in get_function_params(fn.fn)]
    for component, name in zip(fn.inputs, names, strict=True):
        component.label = name
        component._api_info = {**component._api_info, "additional_description": parameters.get(name, "")}
    for component, (label, description) in zip(fn.outputs, returns, strict=True):
        component.label = label
        component._api_info = {**component._api_info, "description": description}


def oauth_of(request: Any) -> tuple[Any, Any]:
    """(gr.OAuthProfile, gr.OAuthToken) of a "Sign in with Hugging Face" session that made `request`, read as
    Gradio reads them for a handler that asks for them; (None, None) when not signed in (or no sign-in here).
    Why not ask for them as parameters: Gradio then offers `oauth_token=` in the API page's snippets, which
    an API client cannot fill (the sign-in is the page's cookie)."""
    from gradio import oauth
    from gradio.helpers import _session_from_request

    info = oauth._get_valid_oauth_info_from_session(_session_from_request(request))
    if not isinstance(info, dict) or not isinstance(info.get("userinfo"), dict):
        return None, None
    token = oauth.OAuthToken(token=info["access_token"], scope=info.get("scope", ""),
                             expires_at=info.get("expires_at", 0))
    return oauth.OAuthProfile(info["userinfo"]), token


class AbsoluteFileUrlMiddleware:
    """Let `gradio_client` download the files the app publishes.

    The app gives published files absolute URLs so Gradio passes them through without copying (see
    ui/chat/published_files.py); Gradio then also puts that URL in the file's `path`, and gradio_client asks for
    `/gradio_api/file=<path>`, i.e. `/gradio_api/file=http://host/gradio_api/file=/real/path`, which Gradio
    refuses. This rewrites exactly that form, when the inner URL is this app's own file route, to the inner
    path; Gradio's own checks then apply to it as to any file request.
    """

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            path = scope.get("path", "")
            index = path.find(FILE_ROUTE)
            if index >= 0:
                inner = unquote(path[index + len(FILE_ROUTE):])
                if inner.startswith(("http://", "https://")):
                    parsed = urlsplit(inner)
                    local = parsed.path
                    if FILE_ROUTE in local:
                        rewritten = path[:index] + local[local.index(FILE_ROUTE):]
                        scope = dict(scope, path=rewritten, raw_path=rewritten.encode())
        await self.app(scope, receive, send)


# ----- who signed in, read from a request that did not go through Gradio's routes (the MCP endpoint: ui/mcp/) -----
def password_user(scope: Any, bearer: str | None) -> str | None:
    """The user a password sign-in gave this request: Gradio's access token (the cookie `/login` sets, or the same
    value sent as a bearer token), looked up where Gradio keeps its tokens (`App.tokens`). None if not signed in."""
    app = scope.get("app")
    tokens = getattr(app, "tokens", None)
    cookie_id = getattr(app, "cookie_id", None)
    if not isinstance(tokens, dict) or not cookie_id:
        return None
    cookies = _cookies(scope)
    for token in (bearer, cookies.get(f"access-token-{cookie_id}"), cookies.get(f"access-token-unsecure-{cookie_id}")):
        user = tokens.get(token) if token else None
        if isinstance(user, str) and user:
            return user
    return None


def hf_signed_in(scope: Any) -> tuple[str, str] | None:
    """(username, access token) of a "Sign in with Hugging Face" session (Gradio's session cookie, which its
    SessionMiddleware has read into `scope["session"]`), unless expired. None if not signed in."""
    session = scope.get("session")
    info = session.get("oauth_info") if isinstance(session, dict) else None
    if not isinstance(info, dict):
        return None
    expires_at = info.get("expires_at")
    if isinstance(expires_at, (int, float)) and expires_at < time.time():
        return None
    userinfo = info.get("userinfo")
    name = userinfo.get("preferred_username") if isinstance(userinfo, dict) else None
    token = info.get("access_token")
    if not isinstance(name, str) or not name or not isinstance(token, str):
        return None
    return name, token


def _cookies(scope: Any) -> dict[str, str]:
    from starlette.requests import HTTPConnection

    try:
        return dict(HTTPConnection(scope).cookies)
    except Exception:  # a malformed Cookie header: no cookies
        return {}
