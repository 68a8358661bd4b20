"""Who owns a browser tab's saved chats.

The browser's random token, kept in `gr.BrowserState` (the browser's localStorage, so it survives reloads and
app restarts), hashed into the owner key (ui/saved/store.py); with login on, the signed-in user. Each tab's
server-side session is bound to its owner when the page loads (`bind`), so later events of the tab, which do
not all carry the browser state or the signed-in profile, find it again.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from ui.saved.store import ChatStore, new_token, valid_token

#: How long a message sent from a page waits for that page's load to set up its session (`wait_loaded`).
PAGE_LOAD_WAIT_S = 15.0
#: At most this many events wait for a page load at once, and this many tabs that never loaded are remembered:
#: the tab key is the visitor's to choose, so waiting must not become a way to park the server's run threads.
MAX_WAITING = 4
MAX_GIVEN_UP = 10_000
#: Tabs whose owner and page load are remembered. API clients never unload (every call from a fresh client is
#: a tab), so without a bound the maps grew for good; past it the tabs bound longest ago are forgotten.
MAX_TABS = 100_000


def _trim(entries: dict, limit: int) -> None:
    while len(entries) > limit:
        del entries[next(iter(entries))]


def tab_key(request: Any) -> str:
    """The tab's key: Gradio's session hash of its page (API calls without one share "anonymous")."""
    return getattr(request, "session_hash", None) or "anonymous"


class TabOwners:
    def __init__(self, store: ChatStore) -> None:
        self.store = store
        self._tabs: dict[str, str] = {}  # tab key -> owner key
        self._lock = threading.Lock()
        self._loaded: dict[str, None] = {}  # tabs whose page load has set up their session (oldest first)
        self._load_done = threading.Condition(self._lock)
        self._waiting = 0
        self._given_up: OrderedDict[str, None] = OrderedDict()  # tabs whose load never came: no second wait

    def identify(self, state: Any, request: Any, profile: Any = None) -> tuple[str, dict[str, Any]]:
        """(owner key, browser state to store): the signed-in Hugging Face user's (`profile`), the password
        user's, else the browser's own random token (a new one when it has none)."""
        state = dict(state) if isinstance(state, dict) else {}
        if not valid_token(state.get("token")):
            state = {"token": new_token()}
        hf_user = getattr(profile, "username", None) if profile is not None else None
        if hf_user is None:
            bound = self.owner_of(tab_key(request))
            if bound is not None and bound != self.store.owner_for_token(state["token"]):
                return bound, state  # this tab's page load identified a signed-in user
        username = f"hf:{hf_user}" if hf_user else getattr(request, "username", None)
        owner = self.store.owner_for_user(username) if username else self.store.owner_for_token(state["token"])
        return owner, state

    def bind(self, key: str, owner: str) -> None:
        with self._lock:
            self._tabs.pop(key, None)
            self._tabs[key] = owner  # newest last
            _trim(self._tabs, MAX_TABS)

    def owner_of(self, key: str) -> str | None:
        with self._lock:
            return self._tabs.get(key)

    def forget(self, request: Any) -> None:
        """The tab's page went away."""
        with self._lock:
            self._tabs.pop(tab_key(request), None)
            self._loaded.pop(tab_key(request), None)

    def mark_loaded(self, key: str) -> None:
        """The tab's page load is done (whatever came of it): its waiting messages go on."""
        with self._lock:
            self._loaded[key] = None
            _trim(self._loaded, MAX_TABS)
            self._load_done.notify_all()

    def wait_loaded(self, key: str, timeout: float = PAGE_LOAD_WAIT_S) -> bool:
        """Wait until the tab's page load has set up its session (False after `timeout` seconds).

        Why: on a busy server a message sent from a page can reach its handler before the page's load has
        identified the browser; its run would then go on in a session that is no saved chat, and be lost.
        A tab whose load never comes (a page left open across a server restart) waits once: after a timeout
        its later events go on at once. While MAX_WAITING events wait, further ones go on without waiting."""
        with self._lock:
            if key in self._loaded:
                return True
            if key in self._given_up or self._waiting >= MAX_WAITING:
                return False
            self._waiting += 1
            try:
                loaded = self._load_done.wait_for(lambda: key in self._loaded, timeout)
            finally:
                self._waiting -= 1
            if not loaded:
                self._given_up[key] = None
                while len(self._given_up) > MAX_GIVEN_UP:
                    self._given_up.popitem(last=False)
            return loaded
