"""The small set of services the app's handlers and panels are built from (one of each per server).

The layout (ui/layout.py) composes the page: it builds each panel's components and wires its handlers, giving
them these services. No panel knows the app (ui/app.py) or another panel's controller.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ui.agent_factory import build_agent
from ui.chat.streamer import RunStreamer
from ui.saved.owners import TabOwners, tab_key
from ui.saved.storage_probe import check_data_folder
from ui.saved.store import ChatStore, secret_is_configured
from ui.session.lease import ChatLeases
from ui.session.presence import PRESENCE, PagePresence
from ui.session.registry import SessionRegistry
from ui.session.session import Session
from ui.settings import AppConfig
from ui.shared.blobs import LocalBlobs
from ui.shared.choose import open_blob_store, open_shared_state
from ui.shared.state import MemoryState, SharedState
from ui.web.rate_limit import visitor_of
from ui.web.run_gate import RunGate


@dataclass
class Services:
    config: AppConfig  # what the operator allows
    registry: SessionRegistry  # every live session, by tab (ui/session/registry.py)
    store: ChatStore  # saved chats on disk (ui/saved/store.py)
    owners: TabOwners  # whose saved chats a tab shows (ui/saved/owners.py)
    leases: ChatLeases  # which tab continues which saved chat (ui/session/lease.py)
    streamer: RunStreamer  # a session's run as chat updates (ui/chat/streamer.py)
    gate: RunGate  # the checks before a run starts: settings, sign-in, run limits, a sandbox (ui/web/run_gate.py)
    state: SharedState  # leases, tombstones, limits: memory, or Redis shared by replicas (ui/shared/state.py)

    @classmethod
    def create(cls, config: AppConfig) -> Services:
        reap_orphaned_workers(config)  # before anything starts a sandbox (whose start would sweep them unsaid)
        # One state per app in one process (tests build many); with Redis, what every replica shares.
        state = open_shared_state(config.redis_url) if config.redis_url else MemoryState()
        # Pages counted in Redis too: this app's own count of them, so the process-wide default never points at
        # one app's Redis (launch() hands it to the heartbeat middleware).
        presence = PagePresence() if config.redis_url else PRESENCE
        if config.redis_url:
            presence.share(state)
        registry = SessionRegistry(
            config.data_dir, presence=presence,
            agent_factory=lambda settings, workdir: build_agent(settings, workdir, config),
            idle_timeout_s=config.idle_timeout_s, grace_s=config.grace_s, max_upload_bytes=config.max_upload_bytes,
            pageless_idle_s=config.pageless_idle_s, max_sandboxes=config.max_sandboxes,
            decision_timeout_s=config.decision_timeout_s, reattach_grace_s=config.reattach_grace_s,
            max_sessions=config.max_sessions,
        )
        if config.redis_url:
            from agents.host_settings import configure_host

            configure_host(sandbox_holds=state)  # remote sandboxes held once among replicas (agents/executor/holds.py)
        blobs = open_blob_store(config.chat_store, config.data_dir)
        if isinstance(blobs, LocalBlobs):  # renames, locks (and a link for a generated secret) on the data folder
            check_data_folder(config.data_dir, needs_link=not secret_is_configured())
        store = ChatStore(config.data_dir, blobs=blobs, state=state)
        store.sweep_unused()
        streamer = RunStreamer(registry)
        return cls(config, registry, store, TabOwners(store), ChatLeases(registry, state, config.idle_timeout_s),
                   streamer, RunGate(config, registry, streamer, state), state)

    def session_for(self, request: Any, from_page: bool = False) -> Session:
        """The tab's session (a new one on first use), kept as a saved chat of the tab's owner. An event
        `from_page` first waits for that page's load, which binds the tab to its owner (`TabOwners.wait_loaded`)."""
        key = tab_key(request)
        if from_page:
            self.owners.wait_loaded(key)
        return self.adopt(key, self.registry.get(key, visitor_of(request)))

    def acting_session(self, request: Any) -> Session:
        """The session Stop and the decision panel act on: the run this tab watches read-only while it goes on
        (the same owner's chat, in another tab: ui/session/watchers.py), else the tab's own (`session_for`)."""
        watched = self.registry.watchers.live(tab_key(request))
        return watched if watched is not None else self.session_for(request)

    def adopt(self, key: str, session: Session) -> Session:
        """A tab bound to an owner whose session is not a saved chat yet (new, or new after an idle close):
        make it one."""
        owner = self.owners.owner_of(key)
        if owner is not None and session.record.saved is None:
            session.keep_in(lambda: self.store.create(owner))
        return session


def reap_orphaned_workers(config: AppConfig) -> int:
    """At start-up: kill the local sandbox workers left by an app that was killed (`kill -9`). They were stopped
    between steps, so they could not notice; without this they stay, frozen and holding memory, until a sandbox
    start happens to sweep them. How many were reaped goes to the log."""
    if config.sandbox != "local":
        return 0  # the Docker backend removes its own orphaned containers when it reaches an engine
    from agents.executor.local.process import sweep_orphans

    reaped = sweep_orphans(force=True)
    if reaped:
        logging.getLogger("agentdeck").warning(
            "Reaped %d sandbox worker%s left stopped by an earlier AgentDeck that was killed.", reaped,
            "" if reaped == 1 else "s")
    else:
        logging.getLogger("agentdeck").info("No orphaned sandbox workers to reap.")
    return reaped
