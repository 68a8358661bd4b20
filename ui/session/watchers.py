"""Tabs that show another tab's run read-only (issue 31): a second tab opened on a chat whose run goes on in a
tab still open. No Gradio here: the watch itself is ui/panels/watch.py.

Why: the second tab used to get only a toast, and its Stop looked for a run in its own session, which had none.
A watching tab shows the run live, its Stop and the decision panel act on the run it watches (the same owner's,
checked when the watch starts), and its messages are not sent while the run goes on.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ui.session.session import Session

#: Watches remembered at most (a tab key is the visitor's to make up): the oldest go first.
MAX_WATCHES = 10_000


@dataclass(frozen=True)
class Watch:
    """Tab `key` shows `session`'s run of the saved chat `chat_id` of `owner`."""
    session: Session
    chat_id: str
    owner: str

    @property
    def live(self) -> bool:
        """The watched run goes on (or waits for a decision) in a session not closed."""
        session = self.session
        return session.closed_at is None and session.unfinished()


class Watchers:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tabs: dict[str, Watch] = {}

    def watch(self, key: str, watch: Watch) -> None:
        with self._lock:
            self._tabs.pop(key, None)
            self._tabs[key] = watch
            while len(self._tabs) > MAX_WATCHES:
                del self._tabs[next(iter(self._tabs))]

    def get(self, key: str) -> Watch | None:
        with self._lock:
            return self._tabs.get(key)

    def live(self, key: str) -> Session | None:
        """The session whose run tab `key` watches, while that run goes on; None otherwise."""
        watch = self.get(key)
        return watch.session if watch is not None and watch.live and watch.session.key != key else None

    def forget(self, key: str, watch: Watch | None = None) -> None:
        """Tab `key` watches nothing now (only if it still watches `watch`, when given)."""
        with self._lock:
            if watch is None or self._tabs.get(key) is watch:
                self._tabs.pop(key, None)
