"""What the streaming handlers (a run, a resumed run) send with each update: chat, message box, files, status, clock.

Three Gradio costs shape this module; with many runs streaming they decided the latency (bench/ui_load.py):
  * Gradio handles every update dict, gr.skip() included, by building a new component and its config
    (JSON schemas; milliseconds each). So an output that did not change is sent as a plain value where the
    browser's value is known (`Shown`: the message box this run cleared, the files panel) and as gr.skip()
    only where it is not.
  * Gradio postprocesses each output in its own hop from its one event loop to a worker thread, so every
    update costs five thread hand-offs, and with many runs streaming these queue up behind each other. So
    the streaming events are wired with postprocess=False, and `StreamOutputs.render` runs the components'
    own postprocess here, in the handler's thread (ui/web/gradio_compat.py `browser_value`): the browser gets
    exactly what Gradio would have sent.
  * Gradio checks every file of an output on every update (0.4 ms each, on its event loop). Files are
    published copies with absolute URLs (ui/chat/published_files.py), which it passes through.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import gradio as gr

from ui.chat.published_files import add_urls
from ui.components import ChatColumn
from ui.web.gradio_compat import browser_value, chat_message_values

if TYPE_CHECKING:
    from ui.session.session import Session


EMPTY_MESSAGE = {"text": "", "files": []}  # the message box's value once a run has taken the message


#: An unchanged files panel is sent again as it is (5 µs a file for Gradio) up to this many files, and as
#: gr.skip() (a fixed ~1.4 ms) beyond.
FILES_RESENT_UP_TO = 200


@dataclass
class Shown:
    """What one handler's updates have put in the browser so far, so that its next update sends only what changed."""
    files_version: int = -1
    files: list[str] | None = None  # the files panel's published paths as last sent
    cleared_for: Any = None  # the run (RunHandle) whose start cleared the message box
    root_url: str | None = None  # the app's URL as this handler's browser sees it (file URLs), if known
    rendered: dict = field(default_factory=dict)  # chat message key -> its postprocessed form (see render_chat)
    rendered_files: tuple[Any, Any] = (None, None)  # (files panel paths, their postprocessed form)


def session_outputs(session: Session, shown: Shown, input_update: Any = None) -> tuple:
    """(chat, message box, files, status, clock): the chat and status in full, the rest only if changed."""
    record = session.record
    with session.lock:
        messages = record.transcript.messages()
        status = record.transcript.status_text()
        clock = {"sent_at": time.time(), "events": record.take_clock()}
        if shown.files_version != record.files_version:
            shown.files_version = record.files_version
            shown.files = record.file_paths() or None
            files = shown.files
        elif shown.files is not None and len(shown.files) > FILES_RESENT_UP_TO:
            files = gr.skip()
        else:
            files = shown.files
        if input_update is None:  # unchanged: still cleared while it is this run's (New chat re-enables it)
            cleared = shown.cleared_for is not None and session.run is shown.cleared_for
            input_update = None if cleared else gr.skip()
    return (messages, input_update, files, f"<small>{status}</small>" if status else "", clock)


class StreamOutputs:
    """The five output components of the streaming events, to postprocess their values before Gradio sees them.

    Events whose handler yields `render(...)` must be wired with postprocess=False (ui/layout.py, the panels).
    """

    def __init__(self, column: ChatColumn) -> None:
        self.components = tuple(column.outputs())

    def render(self, values: tuple, shown: Shown | None = None) -> tuple:
        if shown is None:
            return tuple(browser_value(component, value)
                         for component, value in zip(self.components, values, strict=True))
        chat, task_input, files, status, clock = self.components
        messages, input_value, file_paths, status_value, clock_value = values
        return (render_chat(chat, messages, shown.rendered, shown.root_url), browser_value(task_input, input_value),
                render_files(files, file_paths, shown), browser_value(status, status_value),
                browser_value(clock, clock_value))


def render_files(component: Any, paths: Any, shown: Shown) -> Any:
    """The files panel's value, postprocessed once per list of files (the same list is sent again unchanged)."""
    if not isinstance(paths, list):
        return browser_value(component, paths)
    key, value = shown.rendered_files
    if key != paths:
        key, value = list(paths), add_urls(browser_value(component, paths), shown.root_url)
        shown.rendered_files = (key, value)
    return value


def render_chat(chat: Any, messages: Any, cache: dict, root_url: str | None = None) -> Any:
    """The chat as the browser receives it, postprocessing only the messages that changed since the last update.

    Every update re-sends the whole chat, and near the end of a long run nearly all of it is unchanged: the
    postprocessed form of a message is kept by (role, content, metadata) and reused. `cache` ends up holding
    the current messages only. Published files get their absolute URL (`root_url`).
    """
    if not isinstance(messages, list):
        return browser_value(chat, messages)
    out: list = []
    used: dict = {}
    for message in messages:
        key = _message_key(message)
        done = used.get(key) if key is not None else None
        if done is None:
            done = cache.get(key) if key is not None else None
        if done is None:
            done = add_urls(chat_message_values(chat, message), root_url)
        if key is not None:
            used[key] = done
        out.extend(done)
    cache.clear()
    cache.update(used)
    return out


def _message_key(message: Any) -> tuple | None:
    """A hashable identity for a message dict whose content is text or a file dict of strings; None for
    anything else (components). A file message's path is its published copy, which never changes content."""
    if type(message) is not dict:
        return None
    content = message.get("content")
    if type(content) is dict:
        if any(type(v) is not str for v in content.values()):
            return None
        content = tuple(sorted(content.items()))
    elif type(content) is not str:
        return None
    metadata = message.get("metadata")
    if metadata is not None and (type(metadata) is not dict
                                 or any(type(v) not in (str, int, float, bool) for v in metadata.values())):
        return None
    extra = [k for k in message if k not in ("role", "content", "metadata")]
    if extra:
        return None
    return message.get("role"), content, tuple(sorted(metadata.items())) if metadata else ()
