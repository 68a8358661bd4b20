"""Everything AgentDeck does that depends on Gradio's internals, in one place, with the versions it was written for.

Written and tested for Gradio 6.31 (`TESTED_VERSIONS`); `check_version()` logs a warning at start-up on any other
version, and tests/ui/test_gradio_compat.py fails when the installed Gradio is outside that range, so an
upgrade is a reason to re-read this module, not a surprise. What is here, and why each is needed:
- Serving files: Gradio's upload folder, its root-URL and file-route helpers, and a middleware for
  gradio_client (published files carry absolute URLs: ui/chat/published_files.py).
- Taking files in: only uploads (`refuse_remote_files`: Gradio would fetch a file an event names by URL), each
  stored in a folder of its own that no other visitor can name (`private_uploads`: Gradio's folder is named by
  the content's hash, shared by everyone who uploads the same bytes), and no form field of an upload request
  past a small size held in memory (`cap_upload_fields`: Gradio's parser keeps it whole).
- Rendering updates in the handler's thread: a component's own `postprocess`, Gradio's update dicts
  (`{"__type__": "update"}`) and its pydantic models (ui/chat/stream_outputs.py explains the cost it saves).
- The API (ui/api/) and the MCP endpoint's sign-in: in `gradio_callers.py`, split out of this file.
- Events: `gr.SelectData` for API calls, the chat's example records (Gradio changes them in place), the token
  of Gradio's local mock login.
- The page's DOM, in JavaScript: in `gradio_dom.py`, split out of this file (the message box lock, closing the
  Sidebar on phones, the × of a read-only File, the chat's loading state and scrolling).
Still outside: CSS selectors on Gradio's markup in the panels' CSS strings (ui/layout.py gathers them).
"""
from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from gradio import EventData
from gradio.data_classes import GradioModel, GradioRootModel
from gradio.exceptions import Error
from gradio.route_utils import API_PREFIX, get_api_call_path, get_root_url
from gradio.utils import get_upload_folder
from gradio_client.utils import encode_file_path, is_http_url_like
from packaging.version import Version

# Gradio passes event data only to a parameter annotated with an EventData class itself: `EventData | None`
# gets nothing. A handler that may also be called without it (tests) says `event: OptionalEventData = None`,
# which Gradio reads as EventData and the type checker as EventData | None.
if TYPE_CHECKING:
    from gradio.components.chatbot import ExampleMessage

    OptionalEventData = EventData | None
else:
    OptionalEventData = EventData

#: Gradio versions this module was written and tested for: from the first, below the second.
TESTED_VERSIONS = ("6.31.0", "6.32.0")
FILE_ROUTE = "/gradio_api/file="
LOG = logging.getLogger("agentdeck")


def tested(version: str) -> bool:
    """Whether `version` of Gradio is in the range this module was tested with."""
    low, high = (Version(v) for v in TESTED_VERSIONS)
    return low <= Version(version) < high


def check_version() -> bool:
    """At start-up: warn (in the log) when the installed Gradio is outside the tested range. True if inside."""
    import gradio

    if tested(str(gradio.__version__)):
        return True
    LOG.warning("AgentDeck: ui/web/gradio_compat.py was tested with Gradio >=%s,<%s; this is %s: re-check its "
                "workarounds (and the page's JavaScript in gradio_dom.py).", *TESTED_VERSIONS, gradio.__version__)
    return False


# ----- serving files -----------------------------------------------------------------------------------
def upload_folder() -> Path:
    """The folder Gradio serves uploaded (and our published) files from."""
    return Path(get_upload_folder())


class RemoteFileRefusedError(Error):
    """An event named a file by URL: this server takes files in only as uploads (shown to the visitor)."""


def refuse_remote_files() -> None:
    """Gradio never fetches a file an event names by URL (process-wide, idempotent).

    Why: Gradio moves each file of an event's input into its cache, and one given as `{"path": "https://..."}`
    is downloaded from that host: whole into the app's memory before it is written, with no size limit, outside
    the upload route (its `max_file_size` and the disk floor, ui/web/disk_floor.py). One message naming a large
    or endless file took the server's memory, and the server fetched any public address a visitor chose. The
    app's only file input is the message box's uploads; its outputs carry their URLs in `url`, which Gradio
    passes through without this call."""
    from gradio.blocks import Block

    if getattr(Block.async_move_resource_to_block_cache, "_local_only", False):
        return
    fetch_async, fetch = Block.async_move_resource_to_block_cache, Block.move_resource_to_block_cache

    def refused(url_or_file_path: Any) -> None:
        if url_or_file_path is not None and is_http_url_like(str(url_or_file_path)):
            raise RemoteFileRefusedError("This server takes files only as uploads, not by address: upload the "
                                         "file itself.")

    async def local_only_async(self: Any, url_or_file_path: Any) -> Any:
        refused(url_or_file_path)
        return await fetch_async(self, url_or_file_path)

    def local_only(self: Any, url_or_file_path: Any) -> Any:
        refused(url_or_file_path)
        return fetch(self, url_or_file_path)

    local_only_async._local_only = True  # type: ignore[attr-defined]
    Block.async_move_resource_to_block_cache = local_only_async  # type: ignore[method-assign]
    Block.move_resource_to_block_cache = local_only  # type: ignore[method-assign]


#: The folder of Gradio's upload folder that holds the uploads, one random folder per upload request.
PRIVATE_UPLOADS = "agentdeck-uploads"


def private_uploads_root() -> Path:
    """Where `private_uploads` stores visitors' uploads (inside the folder Gradio serves)."""
    return upload_folder() / PRIVATE_UPLOADS


def private_uploads() -> None:
    """Each upload request's files go into a new random folder of `private_uploads_root()` (process-wide,
    idempotent).

    Why: Gradio stores an upload at <upload folder>/<hash of its bytes>/<name>, a hash keyed by one secret of the
    server's. Whoever uploads the same bytes under the same name gets the same path back: a visitor could
    confirm that someone else had uploaded a given file (a leaked report, a known spreadsheet), and with the
    path fetch it from /gradio_api/file=. Under a random folder per request (128 bits), the path names nothing
    another visitor can know, and uploading the same bytes yields a new folder whose answer is the same whether
    or not anyone uploaded them before. The folder goes once the message that sent the file has taken it in
    (`discard_upload`); one never sent goes with Gradio's cache clean-up (ui/layout.py: delete_cache)."""
    import gradio.routes as routes

    original = routes.upload_fn
    if getattr(original, "_private", False):
        return

    async def private_upload_fn(request: Any, upload_dir: str, *args: Any, **kwargs: Any) -> Any:
        folder = Path(upload_dir) / PRIVATE_UPLOADS / secrets.token_hex(16)
        return await original(request, str(folder), *args, **kwargs)

    private_upload_fn._private = True  # type: ignore[attr-defined]
    routes.upload_fn = private_upload_fn


#: The most one form part of an upload request that is not a file may hold. Gradio's client sends files alone
#: (parts with a `filename`, streamed to disk); anything else is a visitor's own form, and Gradio keeps it whole.
MAX_UPLOAD_FIELD_BYTES = 64 * 1024


def cap_upload_fields() -> None:
    """Gradio's upload route refuses a form part that is not a file past `MAX_UPLOAD_FIELD_BYTES` (413), as it
    refuses a file past its size (process-wide, idempotent).

    Why: its multipart parser streams file parts to disk but appends every other part to a buffer in memory
    with no limit (Starlette's own parser caps a part at 1 MB; Gradio's copy has no such check), and the request
    cap leaves this route to its own limits: one request with a 60 MB field took the app's memory with it, up to
    each visitor's hourly upload share (1 GB by default) at a time."""
    from gradio.route_utils import GradioMultiPartParser, MultiPartException

    original = GradioMultiPartParser.on_part_data
    if getattr(original, "_capped", False):
        return

    def capped(self: Any, data: bytes, start: int, end: int) -> None:
        part = self._current_part
        if part.file is None and len(part.data) + (end - start) > MAX_UPLOAD_FIELD_BYTES:
            raise MultiPartException(f"A form field exceeded maximum allowed size of {MAX_UPLOAD_FIELD_BYTES} bytes: "
                                     "send files as files.")
        original(self, data, start, end)

    capped._capped = True  # type: ignore[attr-defined]
    GradioMultiPartParser.on_part_data = capped  # type: ignore[method-assign]


def discard_upload(path: str | Path) -> bool:
    """Delete a file the upload route stored (its message took it into the workspace), and its folders once
    empty. Anything outside `private_uploads_root()` (a bundled example, a workspace file) is left alone: False."""
    root = os.path.realpath(private_uploads_root())
    real = os.path.realpath(path)
    if os.path.commonpath([real, root]) != root or real == root:
        return False
    try:
        os.unlink(real)
    except OSError:
        return False
    folder = os.path.dirname(real)
    while folder != root and os.path.commonpath([folder, root]) == root:
        try:
            os.rmdir(folder)  # only an empty folder: another file of the same request may still wait
        except OSError:
            break
        folder = os.path.dirname(folder)
    return True


def root_url_of(request: Any) -> str | None:
    """The app's public URL as the browser sees it (behind proxies too), computed as Gradio does for its own
    file URLs; None without an HTTP request (a direct call), and then Gradio fills the URLs in itself."""
    http_request = getattr(request, "request", None)
    if http_request is None or not hasattr(http_request, "url"):
        return None
    try:
        app = http_request.scope.get("app")
        return get_root_url(request=http_request, route_path=get_api_call_path(request=http_request),
                            root_path=getattr(app, "root_path", None))
    except Exception:  # an unusual request: let Gradio work the URLs out
        return None


def file_url(published_path: str, root_url: str) -> str:
    """The URL Gradio serves a file of its upload folder at."""
    return f"{root_url}{API_PREFIX}/file={encode_file_path(published_path)}"


def page_file_url(published_path: str) -> str:
    """That URL relative to the page (Gradio's file route under the app's own path, so behind a proxy's path
    prefix too): links in chat text (ui/chat/file_links.py)."""
    return f"{API_PREFIX.lstrip('/')}/file={encode_file_path(published_path)}"


# ----- rendering updates ourselves ---------------------------------------------------------------------
def is_update(value: Any) -> bool:
    """A Gradio update dict (`gr.update(...)`, `gr.skip()`)."""
    return isinstance(value, dict) and "update" in str(value.get("__type__", ""))


def browser_value(component: Any, value: Any) -> Any:
    """`value` as the browser receives it from `component`, as Gradio's own postprocessing would send it; in an
    update dict only its value is postprocessed (gr.skip() passes as it is)."""
    if is_update(value):
        if "value" in value:
            value = {**value, "value": _dump(component.postprocess(value["value"]))}
        return value
    return _dump(component.postprocess(value))


def component_message(make: Any, name: str) -> dict[str, Any]:
    """A chat message's content holding a component (`make()` builds it, with render=False), as a plain dict.

    Why a fresh context: inside an event handler Gradio's constructors only record their arguments (an update)
    and skip the component's own set-up, so `get_config` fails; run in an empty `contextvars.Context`, the
    constructor is not in an event listener and builds the whole component."""
    import contextvars

    config = contextvars.Context().run(lambda: make().get_config())
    # Gradio 6.31's chat passes a message's props to the component flat, while its Dataframe builds its state
    # from `props`/`shared_props` (and fails on `props.i18n_store` of undefined): both are given as well.
    shared = {key: config[key] for key in ("label", "show_label", "visible", "elem_id", "elem_classes", "interactive",
                                           "scale", "min_width", "container") if key in config}
    props = {**config, "props": dict(config), "shared_props": {**shared, "interactive": False, "container": False}}
    return {"type": "component", "component": name, "value": config.get("value"),
            "constructor_args": {"interactive": False, "render": False}, "props": props}


def chat_message_values(chat: Any, message: Any) -> list[Any]:
    """One chat message as the browser receives it (Gradio may split one into several)."""
    return [_dump(m) for m in chat.postprocess([message]).root]


def _dump(value: Any) -> Any:
    return value.model_dump() if isinstance(value, (GradioModel, GradioRootModel)) else value


# ----- events --------------------------------------------------------------------------------------------
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


# As OptionalEventData: Gradio reads `clicked: OptionalSelectData = None` as ExampleSelectData, the type checker
# as ExampleSelectData | None.
if TYPE_CHECKING:
    OptionalSelectData = ExampleSelectData | None
else:
    OptionalSelectData = ExampleSelectData


def chat_examples(examples: list[dict[str, Any]]) -> list[ExampleMessage]:
    """The chat's examples for Gradio, as copies: Gradio turns their `files` lists into its own file records in
    place, and the handler (`AgentDeckApp.run_example`) reads the paths from the originals."""
    copies = [{key: list(value) if isinstance(value, list) else value for key, value in example.items() if key != "_"}
              for example in examples]
    return cast("list[ExampleMessage]", copies)  # the examples' keys are Gradio's (text, display_text, files)


#: What Gradio's local mock of the Hugging Face login hands out as the token (gradio/oauth.py).
MOCK_ACCESS_TOKEN = "mock-oauth-token-for-local-dev"
