"""A session's part in keeping a saved chat's sandbox across replicas (issue 28): its agents' sandboxes record whose
they are, the chat records its sandbox's id (ui/saved/sandbox_record.py), a reopened chat attaches that sandbox
before it would rebuild the variables, and a sandbox the session ends on purpose is forgotten.

Why apart from the session: this is the only part of `ui/session/` that knows sandboxes can outlive the app.
Everything read back is hostile: the record is checked (size, characters, signature bound to the chat) and the
backend's `attach` checks the sandbox was started for this chat with these imports; whatever fails, the chat
falls back to re-running its code, and the note says which happened in the person's words.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from agents.executor.errors import SandboxError
from ui.saved import sandbox_record
from ui.saved.sandbox_record import RecordRefused, SandboxRef
from ui.saved.store import SavedChat
from ui.shared.blobs import BlobStoreError

log = logging.getLogger("agentdeck.ui")
KEPT_NOTE = ("♻️ **Chat restored.** Its sandbox was still running, so its variables were kept as they were "
             "(no code was re-run).")


def rebuilt_headline(why: str) -> str:
    """The restore note's start when the chat's sandbox could not be used again (the rebuild's report follows)."""
    return f"♻️ **Chat restored.** Its sandbox from before could not be used again ({why})."


def _in_words(exc: BaseException) -> str:
    """Why an attach failed, for the person (the backend's message is for the log: it names ids and services)."""
    text = str(exc).lower()
    if "open elsewhere" in text:
        return "the chat is open elsewhere (another tab, maybe on another server), which holds it"
    if "in use by another session" in text:
        return "it is in use in another open tab of this chat"
    if "another chat" in text:
        return "it belongs to another chat"
    if "other imports" in text or "isolation layers" in text:
        return "it was started with other settings"
    if any(word in text for word in ("gone", "not found", "no longer", "404", "could not reattach", "no live")):
        return "it has ended"
    return "it could not be reached"


class SandboxKeeper:
    """One session's: `prepare` each agent it builds, `note` after each save, `attach` on reopen, `ended` when
    the session closes its sandbox on purpose. `chat_of()` is the session's saved chat now (None: not kept)."""

    def __init__(self, chat_of: Callable[[], SavedChat | None]) -> None:
        self._chat_of = chat_of
        self._recorded: tuple[str, str] | None = None  # (chat id, sandbox id) written last

    def prepare(self, agent: Any) -> Any:
        """A new agent's sandboxes record this chat as their owner."""
        chat = self._chat_of()
        if chat is not None and hasattr(agent, "sandbox_owner"):
            agent.sandbox_owner = sandbox_record.owner_tag(chat)
        return agent

    def note(self, agent: Any) -> None:
        """After a save: record the agent's sandbox when it can outlive the app and is not recorded yet."""
        chat = self._chat_of()
        sandbox = getattr(agent, "live_sandbox", None)
        host = getattr(sandbox, "host", None)
        backend = getattr(sandbox, "backend", None)
        if chat is None or host is None or backend is None or host.ready is None:
            return
        spec = getattr(sandbox, "spec", None)  # a sandbox started for another chat (or none) is not recorded
        if not getattr(backend.capabilities, "attach_elsewhere", False) or \
                getattr(spec, "owner", "") != sandbox_record.owner_tag(chat):
            return
        if self._recorded == (chat.id, host.id):
            return
        try:
            sandbox_record.record(chat, SandboxRef(str(backend.name), str(host.id)))
        except (BlobStoreError, OSError, ValueError) as exc:  # the chat still reopens: by re-running its code
            log.warning("the chat's sandbox could not be recorded: %s", exc)
            return
        self._recorded = (chat.id, host.id)

    def attach(self, agent: Any) -> tuple[bool, str | None]:
        """On reopen, before any sandbox of `agent` starts: (True, None) when the chat's recorded sandbox was
        attached with its variables; (False, why) when they must be rebuilt (`why` None: nothing was recorded)."""
        chat = self._chat_of()
        if chat is None or not hasattr(agent, "attach_sandbox"):
            return False, None
        try:
            ref = sandbox_record.read(chat)
        except RecordRefused as exc:
            log.warning("chat %s: %s", chat.id, exc)
            sandbox_record.drop(chat)
            return False, "its record did not check out, so it was not trusted"
        if ref is None:
            return False, None
        configured = agent.sandbox_backend if isinstance(agent.sandbox_backend, str) else \
            getattr(agent.sandbox_backend, "name", None)
        if ref.backend != (configured or "local"):
            return False, f"this server now runs sandboxes on {configured or 'local'}, not {ref.backend}"
        try:
            kept = agent.attach_sandbox(ref.id)
        except SandboxError as exc:
            log.info("chat %s: sandbox %s not attached: %s", chat.id, ref.id, exc)
            why = _in_words(exc)
            if why == "it has ended":
                sandbox_record.drop(chat, ref.id)
            return False, why
        self._recorded = (chat.id, ref.id)
        return (True, None) if kept else (False, "its worker had restarted")

    def ended(self, host: Any) -> None:
        """The session closed `host` on purpose: unless another replica holds it now (it was let go, not
        ended), the chat's record of it goes (it names a sandbox that is gone)."""
        chat = self._chat_of()
        if chat is None or host is None or getattr(host, "let_go", False):
            return
        if self._recorded is not None and self._recorded == (chat.id, getattr(host, "id", None)):
            sandbox_record.drop(chat, str(host.id))
            self._recorded = None
