"""All live sessions of the server, keyed by the browser tab's session hash, and the reaper that closes idle
ones (sandbox first) and deletes closed sessions' workspaces after a grace period.

Kept apart from the session itself: this is the server-wide bookkeeping (lookups, handing a session to a
reloaded tab, installing a reopened saved chat, cleaning up), not what one tab's session does.
"""
from __future__ import annotations

import secrets
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from ui.saved.store import SavedChat
from ui.session.agent_slot import AgentFactory
from ui.session.presence import PRESENCE, PagePresence
from ui.session.session import Session
from ui.session.watchers import Watchers

RESERVATION_S = 120.0  # a sandbox place promised to a starting run is counted this long at most


class ServerBusyError(Exception):
    """No sandbox can be made available now; the message says so."""

#: Tabs remembered as closed idle (for the note their next event shows).
MAX_EXPIRED_KEYS = 10_000


class SessionRegistry:
    """All live sessions, keyed by the browser tab's session hash."""

    def __init__(self, data_dir: str | Path, agent_factory: AgentFactory, idle_timeout_s: float = 3600.0,
                 grace_s: float = 300.0, max_upload_bytes: int = 50 * 1024 * 1024,
                 pageless_idle_s: float = 180.0, presence: PagePresence = PRESENCE, max_sandboxes: int = 16,
                 decision_timeout_s: float = 1800.0, reattach_grace_s: float = 120.0,
                 max_sessions: int = 2000) -> None:
        self.root = Path(data_dir) / "sessions"
        self.root.mkdir(parents=True, exist_ok=True)
        self.agent_factory = agent_factory
        self.idle_timeout_s = idle_timeout_s
        self.grace_s = grace_s
        self.max_upload_bytes = max_upload_bytes
        self.pageless_idle_s = pageless_idle_s  # sessions no page holds (API clients) go after this long idle
        self.presence = presence
        self.watchers = Watchers()  # tabs showing another tab's run read-only (ui/session/watchers.py)
        self.max_sandboxes = max_sandboxes  # live agents (each with a sandbox worker) on this server at once
        self.decision_timeout_s = decision_timeout_s  # a run paused for a decision holds a sandbox this long at most
        self._admission = threading.Lock()  # one make_room at a time: counting and promising a place is atomic
        self._reserved: dict[int, tuple[Session, float]] = {}  # places promised to runs whose agent is not built yet
        self.reattach_grace_s = reattach_grace_s  # a run whose page went away waits this long for it to come back
        # Live sessions at once (each ~0.3 MB and a folder): any request with a new session hash makes one, so
        # without a cap a visitor looping over the API could grow the process until it runs out of memory.
        self.max_sessions = max_sessions
        self._sessions: dict[str, Session] = {}
        self._visitors: weakref.WeakKeyDictionary[Session, str] = weakref.WeakKeyDictionary()  # who made each
        self._closed: list[Session] = []
        self._expired_keys: dict[str, None] = {}  # tabs whose session was closed idle (oldest first, bounded)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._reaper: threading.Thread | None = None

    def get(self, key: str, visitor: str = "") -> Session:
        """The live session of `key`, or a new one made for `visitor` (ui/web/rate_limit.py's `visitor_of`)."""
        if self.peek(key) is None:
            self._make_room_for_session(visitor)
        with self._lock:
            session = self._sessions.get(key)
            if session is None:
                folder = self.root / secrets.token_hex(16)  # unguessable: files are served from here
                session = Session(key, folder, self.agent_factory, self.max_upload_bytes)
                self._visitors[session] = visitor
                if key in self._expired_keys:
                    del self._expired_keys[key]
                    session.record.add_note("🕰️ The previous session was closed after being idle; this is a "
                                                "fresh one (new memory, empty workspace).")
                self._sessions[key] = session
            session.touch()
            return session

    def install(self, key: str, chat: SavedChat, visitor: str = "", keep_busy: bool = False) -> Session:
        """A new session in a saved chat's folder for `key`, made for `visitor`; the key's previous one is closed
        (see `_close_replaced`). With `keep_busy`, a previous one whose run goes on (or waits for a decision: a
        reloaded tab's, handed back meanwhile) is kept and returned instead."""
        if self.peek(key) is None:
            self._make_room_for_session(visitor)
        session = Session(key, chat.folder, self.agent_factory, self.max_upload_bytes, saved=chat)
        with self._lock:
            old = self._sessions.get(key)
            if keep_busy and old is not None and old.unfinished():
                return old
            self._visitors[session] = visitor
            self._sessions[key] = session
            if old is not None:
                self._closed.append(old)
        if old is not None:
            _close_replaced(old, session)
        return session

    def _make_room_for_session(self, visitor: str = "") -> None:
        """Keep live sessions under `max_sessions`: the longest idle ones without a run (or a decision waiting)
        of the visitor holding the most live sessions are closed first (a new one counted for `visitor`), those
        no page holds before those a page does. A closed saved chat loses nothing: its memory and files are on
        disk, and the tab's next event finds a fresh session.

        Why by visitor: session hashes and the heartbeat streams that mark a page are the client's to make, so a
        visitor making sessions past the cap, each with a page, would otherwise close everyone else's idle ones
        (their variables, their open chat) one by one; so it closes its own."""
        with self._lock:
            excess = len(self._sessions) + 1 - self.max_sessions
            candidates = list(self._sessions.values()) if excess > 0 else []
            held: dict[str, int] = {visitor: 1}
            for session in candidates:
                owner = self._visitors.get(session, "")
                held[owner] = held.get(owner, 0) + 1
        if not candidates:
            return
        idle = [s for s in candidates if not s.running and not s.has_pending()]
        for _ in range(excess):
            if not idle:
                return
            idle.sort(key=lambda s: (-held[self._visitors.get(s, "")], self.presence.has_page(s.key), s.last_active))
            session = idle.pop(0)
            held[self._visitors.get(session, "")] -= 1
            self.close(session.key, expired=True)

    def rekey(self, old_key: str, key: str, when: Callable[[Session], bool] = lambda s: True) -> Session | None:
        """Move the live session of `old_key` (a reloaded tab's) to the tab's new `key`, if `when(session)`."""
        session = self.peek(old_key)
        if session is None or old_key == key or not when(session):
            return None
        with self._lock:
            if self._sessions.get(old_key) is not session:
                return None
            del self._sessions[old_key]
            replaced = self._sessions.get(key)
            self._sessions[key] = session
            session.hand_over(key)  # the new tab's page streams its run
            if replaced is not None:
                self._closed.append(replaced)
        if replaced is not None:
            replaced.close()
        return session

    def make_room(self, for_session: Session) -> None:
        """Keep live sandboxes under the cap: idle ones are closed first, those of the visitor holding the most
        first, least recently used first (their memory stays, and the next message rebuilds the variables as
        reopening a chat does).

        The place is promised to `for_session` until its agent exists (at most RESERVATION_S), so two runs
        starting at the same moment cannot both take the last place."""
        with self._admission:
            now = time.monotonic()
            self._reserved = {k: (s, at) for k, (s, at) in self._reserved.items()
                              if now - at < RESERVATION_S and not s.holds_sandbox and s.closed_at is None}
            if for_session.holds_sandbox:
                return
            with self._lock:
                holders = [s for s in self._sessions.values() if s.holds_sandbox and s is not for_session]
                held = Counter(self._visitors.get(s, "") for s in holders)
            held[self._visitors.get(for_session, "")] += 1
            promised = [s for s, _ in self._reserved.values() if s is not for_session]
            excess = len(holders) + len(promised) + 1 - self.max_sandboxes
            # The visitor holding the most sandboxes gives one up first: a visitor starting runs in fresh sessions
            # would otherwise close everyone else's idle sandboxes (their variables, rebuilt at a cost) in turn.
            for session in sorted(holders, key=lambda s: (-held[self._visitors.get(s, "")], s.last_active)):
                if excess <= 0:
                    break
                if session.hibernate():
                    excess -= 1
            if excess > 0:
                raise ServerBusyError(f"The server is busy: all {self.max_sandboxes} sandboxes are running code "
                                      "for someone. Try again in a minute.")
            self._reserved[id(for_session)] = (for_session, now)

    def release(self, session: Session) -> None:
        """Take back the place promised to `session` by `make_room` (its run ended, or never started: a message
        of refused files, an agent that could not start); a sandbox it holds stays counted as such."""
        with self._admission:
            self._reserved.pop(id(session), None)

    def peek(self, key: str) -> Session | None:
        with self._lock:
            return self._sessions.get(key)

    def sessions(self) -> list[Session]:
        """Every live session, as they are now."""
        with self._lock:
            return list(self._sessions.values())

    def __len__(self) -> int:
        return len(self._sessions)

    def sandbox_counts(self) -> dict[str, int]:
        """Sessions whose agent (and its sandbox) is live, and places promised to runs still starting (metrics)."""
        now = time.monotonic()
        with self._lock:
            live = sum(1 for s in self._sessions.values() if s.holds_sandbox)
            starting = sum(1 for s, at in list(self._reserved.values())
                           if now - at < RESERVATION_S and not s.holds_sandbox and s.closed_at is None)
        return {"live": live, "starting": starting}

    def close(self, key: str, expired: bool = False) -> None:
        with self._lock:
            session = self._sessions.pop(key, None)
            if session is None:
                return
            self._closed.append(session)
            if expired:
                self._expired_keys[key] = None
                while len(self._expired_keys) > MAX_EXPIRED_KEYS:  # keys are the visitor's to make up
                    del self._expired_keys[next(iter(self._expired_keys))]
        session.close()

    def reap(self, now: float | None = None) -> None:
        """Close sessions idle for longer than the timeout; delete workspaces whose grace period is over."""
        now = now or time.time()
        with self._lock:
            sessions = list(self._sessions.items())
        idle = [k for k, s in sessions if self._expired(k, s, now)]
        for key in idle:
            self.close(key, expired=True)
        with self._lock:
            due = [s for s in self._closed if s.closed_at is not None and now - s.closed_at >= self.grace_s]
            self._closed = [s for s in self._closed if s not in due]
        for session in due:
            session.remove_files()

    def _expired(self, key: str, session: Session, now: float) -> bool:
        """Idle past the timeout; or no page holds it (an API client) and it is idle or only waiting for a
        decision; or paused for a decision nobody made in `decision_timeout_s` (it holds a sandbox)."""
        quiet = now - session.last_active
        if quiet > self.idle_timeout_s:
            return True
        if session.detached_at is not None and now - session.detached_at > self.reattach_grace_s:
            return True  # its page went away during a run and did not come back
        if quiet <= min(self.pageless_idle_s, self.decision_timeout_s):
            return False
        paused = session.has_pending()  # its run ended at the decision (pause mode), or a managed agent's waits
        if quiet > self.pageless_idle_s and (not session.running or paused) and not self.presence.has_page(key):
            return True
        return paused and quiet > self.decision_timeout_s

    def start_reaper(self, interval_s: float = 30.0) -> None:
        if self._reaper is not None:
            return

        def loop() -> None:
            while not self._stop.wait(interval_s):
                try:
                    self.reap()
                except Exception:  # never let the reaper die
                    pass

        self._reaper = threading.Thread(target=loop, name="agentdeck-reaper", daemon=True)
        self._reaper.start()

    def shutdown(self) -> None:
        """Close every session and delete every workspace (server shutdown)."""
        self._stop.set()
        with self._lock:
            keys = list(self._sessions)
        for key in keys:
            self.close(key)
        with self._lock:
            closed, self._closed = self._closed, []
        for session in closed:
            session.remove_files()


def _close_replaced(old: Session, new: Session) -> None:
    """Close the session `new` replaced, without waiting for it when it is busy in another folder.

    Why: a second tab's page load reopens this browser's chat and rebuilds its sandbox holding the session's lock
    (seconds: the recorded code runs again); a chat clicked in the side list meanwhile replaces that session, and
    waiting here kept the clicked chat off the screen until the rebuild ended. A session in the same folder is
    closed first (two sandboxes never work in one workspace)."""
    if old.record.root == new.record.root:
        old.close()
        return
    if old.lock.acquire(blocking=False):
        try:
            old.close()
        finally:
            old.lock.release()
        return
    threading.Thread(target=old.close, name=f"close-replaced-{old.key}", daemon=True).start()
