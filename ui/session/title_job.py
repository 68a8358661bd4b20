"""Asking a chat's model for the chat's title after its first answered run, in the background (issue 31).

Why here and not in the run: the title must never block or slow the run or the page. One daemon thread per
chat asks once per session; a timer cancels the call at TITLE_TIMEOUT_S (agents/models/cancel.py closes the
stream's socket), and a late, failed or refused reply leaves the task's title, logged and never shown as an
error. The list picks the title up through its refresh after a run (`wait`, ui/panels/history.py).
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from agents.models.base import TokenUsage
from agents.models.cancel import CancelToken, cancel_scope
from ui.saved.model_titles import TITLE_TIMEOUT_S, clean_reply, should_ask, title_messages
from ui.saved.store import SavedChat

logger = logging.getLogger("ui.titles")


class TitleWriter:
    """A session's title requests: at most one per chat, each in its own thread."""

    def __init__(self, on_tokens: Callable[[TokenUsage], None], timeout_s: float = TITLE_TIMEOUT_S) -> None:
        self._on_tokens = on_tokens  # the tokens the request took, for the usage shown
        self._timeout_s = timeout_s
        self._asked: set[str] = set()
        self._done = threading.Event()
        self._done.set()

    def maybe_start(self, chat: SavedChat, model_string: str, model: Any, task: str, answer: str,
                    files: list[str]) -> bool:
        """Ask `model` for `chat`'s title in the background when `should_ask` says so. True if it started."""
        meta = chat.meta()
        if meta is None or not should_ask(meta.title_by, model_string, model, answer, chat.id in self._asked):
            return False
        self._asked.add(chat.id)
        model = getattr(model, "model", model) if type(model).__name__ == "RecordingModel" else model  # not recorded
        self._done.clear()
        threading.Thread(target=self._ask, args=(chat, model, title_messages(task, answer, files)),
                         name="chat-title", daemon=True).start()
        return True

    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for a title request going on; True once none is."""
        return self._done.wait(timeout)

    def _ask(self, chat: SavedChat, model: Any, messages: list[dict[str, Any]]) -> None:
        token = CancelToken()
        timer = threading.Timer(self._timeout_s, token.cancel)
        timer.daemon = True
        timer.start()
        try:
            reply = None
            with cancel_scope(token):
                for delta in model.generate_stream(messages):
                    if token.cancelled:
                        break
                    reply = delta.reply or reply
            if token.cancelled or reply is None:
                logger.info("chat title: the model gave no title within %.0f s; the task's title stays",
                            self._timeout_s)
                return
            self._on_tokens(reply.token_usage)
            title = clean_reply(reply.content)
            if title is None:
                logger.info("chat title: the model's reply was refused as a title; the task's title stays")
            elif not chat.store.set_model_title(chat, title):
                logger.info("chat title: the chat was renamed, titled or deleted meanwhile; its title stays")
        except Exception as exc:  # a failing model leaves the task's title; the person sees no error
            logger.warning("chat title: the model call failed (%s: %s); the task's title stays",
                           type(exc).__name__, exc)
        finally:
            timer.cancel()
            self._done.set()
