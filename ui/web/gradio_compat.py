"""Workarounds for Gradio behaviour, in one place, with the Gradio versions they were written for.

Written for Gradio 6.31 (GRADIO_VERSIONS); `check_version()` warns at start-up on any other version, so an
upgrade is a reason to re-read this module, not a surprise.
"""
from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote, urlsplit

from gradio import EventData

GRADIO_VERSIONS = ("6.31",)
FILE_ROUTE = "/gradio_api/file="


def check_version() -> None:
    import gradio

    if not str(gradio.__version__).startswith(GRADIO_VERSIONS):
        logging.getLogger(__name__).warning(
            "ui/web/gradio_compat.py was written for Gradio %s; this is %s: re-check its workarounds.",
            ", ".join(GRADIO_VERSIONS), gradio.__version__)


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


class ExampleSelectData(EventData):
    """`gr.SelectData` that also works when an API client (gradio_client) calls the event.

    Such a call carries no click data, and `gr.SelectData` then raises a TypeError (`None["index"]`) before the
    handler runs. Gradio builds any `EventData` subclass named in a handler's type hints; this one takes missing
    data as "nothing clicked" (`index` and `value` None), and the handler picks its default. Used for the chat's
    example clicks and the side list's chats: the page reads a list's value for a select event after the click,
    so a list update landing at that moment (the page load's refresh) can replace it; the click's data cannot.
    """

    def __init__(self, target: Any, data: Any) -> None:
        super().__init__(target, data)
        data = data if isinstance(data, dict) else {}
        self.index: Any = data.get("index")
        self.value: Any = data.get("value")
