"""The chat operations the HTTP API (ui/api/chats.py) and the MCP server (ui/mcp/chats.py) both offer, once.

Why one module: each front had its own copy of finding a caller's chat, starting a run through the page's
checks (ui/app.py `run`: the message's length, the settings the operator allows, the chat's lease, the visitor's
run limits and disk share, a sandbox place), answering the decision a run waits for and reading what a run came
to, so a fix to one could miss the other. What differs stays in each front: which session holds a caller's chat
(the API's random keys, reopened from the store; the MCP's keys derived from the chat id, open ones only), the
shape of requests and results, and their wording (each front's refusal is a `ChatRefused` of its own kind).
No Gradio here: the page's gate (ui/web/run_gate.py) raises its own refusals, which each front passes on as it did.
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents import events as ev
from agents.decisions import Decision
from ui.saved.chat_meta import ChatMeta
from ui.saved.store import SavedChat
from ui.services import Services
from ui.session.pending_decisions import TOO_DEEP, decision_text, too_deep
from ui.session.session import Session
from ui.settings import RunSettings
from ui.settings_form import FormValues, field_names
from ui.uploads.intake import UploadResult

#: At most this many files go with one task.
MAX_FILES_PER_TASK = 20
#: A run's answer and a decision's texts are clipped to this many characters in a result.
MAX_TEXT_CHARS = 100_000
ACTIONS = ("approve", "reject", "edit", "answer")


class ChatRefused(Exception):
    """A call refused, with what to do instead (the caller gets this message). Each front has its own subclass."""


class LeaseRefused(ChatRefused):
    """The chat is continued elsewhere (a browser tab, another call): the lease table's reason."""


def clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + " …(clipped)"


def refusal_text(exc: BaseException) -> str:
    """What a refusal says (gr.Error keeps it in `message`)."""
    return str(getattr(exc, "message", None) or exc)


@dataclass(frozen=True)
class DecisionWording:
    """How one front takes a decision: its refusal, the call that answers (`decide`, `resume`), and the shape
    of an edit (the API sends a tool call's arguments as JSON text and trims edited texts; MCP sends JSON)."""
    refused: type[ChatRefused]
    answer_hint: str  # how to answer a question, as the front's call names it
    tool_call_as_json_text: bool = False
    trim_edits: bool = False


def decision(kind: str, action: str, edited: Any, reason: Any, answer: Any, wording: DecisionWording) -> Decision:
    """The Decision a caller's action makes of a pending request of `kind`, or the front's refusal saying why not."""
    refused = wording.refused
    if action not in ACTIONS:
        raise refused(f"action must be one of {', '.join(ACTIONS)}.")
    if kind == "question":
        if action != "answer" or not str(answer or "").strip():
            raise refused(f"The agent asked a question: {wording.answer_hint}.")
        return Decision.reply(str(answer or ""))
    if action == "answer":
        raise refused("The agent waits for an approval, not an answer: approve, reject or edit.")
    if action == "approve":
        return Decision.approve()
    if action == "reject":
        return Decision.reject(str(reason or "").strip())
    if kind == "tool_call":
        if wording.tool_call_as_json_text:
            try:
                edited = json.loads(str(edited or ""))
            except json.JSONDecodeError as exc:
                raise refused(f"An edited tool call is its arguments as a JSON object ({exc.msg}).") from None
            except RecursionError:
                raise refused(f"An edited tool call's arguments: {TOO_DEEP}") from None
        if not isinstance(edited, dict):
            raise refused('An edited tool call is its arguments as a JSON object, like {"name": "value"}.')
        if too_deep(edited):
            raise refused(f"An edited tool call's arguments: {TOO_DEEP}")
        return Decision.edit(edited)
    if not isinstance(edited, str) or not edited.strip():
        raise refused(f"An edited {kind} is its new text (not empty).")
    return Decision.edit(edited.strip() if wording.trim_edits and kind != "code" else edited)


@dataclass(frozen=True)
class RunState:
    """A chat's session as one read under its lock: what its last run came to, or the decision it waits for
    (`started` False: nothing ran, so neither)."""
    chat_id: str | None
    pending: ev.DecisionRequested | None
    finished: Any  # the transcript's RunFinished, or None
    messages: list[Any] = field(default_factory=list)
    steps: list[Any] = field(default_factory=list)

    @property
    def decision_details(self) -> dict[str, Any]:
        """The pending request's payload as JSON values, its texts clipped."""
        payload = json.loads(json.dumps(self.pending.payload if self.pending else {}, default=str))
        return {k: clip(v) if isinstance(v, str) else v for k, v in payload.items()}

    @property
    def last_note(self) -> str:
        """The chat's last message (why nothing ran: its files refused, an agent that could not start), clipped."""
        last = self.messages[-1] if self.messages else {}
        content = last.get("content") if isinstance(last, dict) else getattr(last, "content", "")
        return clip(content if isinstance(content, str) else str(content))


class ChatService:
    """The operations on the app's services, for a caller named by owner (whose chats) and visitor (whose limits)."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.config = services.config

    # ----- chats and sessions -------------------------------------------------------------------------
    def owned_chat(self, owner: str, chat_id: Any) -> SavedChat | None:
        """The owner's chat with this id; None for another owner's, a deleted or a made-up one alike."""
        return self.services.store.get(owner, chat_id) if isinstance(chat_id, str) else None

    def chats(self, owner: str, limit: int) -> list[ChatMeta]:
        """The owner's chats, newest first, at most `limit`."""
        return self.services.store.list(owner)[:limit]

    def live(self, key: str | None, owner: str, chat_id: str) -> Session | None:
        """The session under `key` if it is open and holds this owner's chat `chat_id` (not deleted)."""
        session = self.services.registry.peek(key) if key else None
        saved = session.record.saved if session is not None else None
        if session is None or session.closed_at is not None or saved is None or saved.id != chat_id \
                or saved.owner != owner or saved.deleted:
            return None
        return session

    def install(self, key: str, chat: SavedChat, visitor: str) -> Session:
        """A new session for `chat` under `key` (a key of the front's, never one a caller names)."""
        return self.services.registry.install(key, chat, visitor)

    def settings(self, model: str | None, max_steps: int | None, token: Any) -> RunSettings:
        """A run's settings as the page's form would give them with only these set (SignInNeededError: an hf:
        model without the caller's Hugging Face sign-in)."""
        form = FormValues(**dict.fromkeys(field_names()))
        form.model, form.max_steps = model, max_steps
        return self.services.gate.settings(form, token=token)

    # ----- runs -----------------------------------------------------------------------------------------
    def admit(self, session: Session, request: Any, approval_mode: str | None, task: str = "") -> None:
        """The chat's lease for this session (LeaseRefused with the lease table's reason; a `task` that answers the
        run's question takes that question once among all replicas), one more run for the visitor and a sandbox
        place (the gate's refusal), and the run's approval mode (None: as it was)."""
        why = self.services.leases.claim_message(session.key, session, task)
        if why is not None:
            raise LeaseRefused(why)
        self.services.gate.admit(request, session)
        session.set_approval_mode(approval_mode)

    def run(self, session: Session, request: Any, task: str, files: Sequence[tuple[str, str]],
            settings: RunSettings, kept: Sequence[UploadResult] = ()) -> bool:
        """Run `task` (with `files` as the page's uploads, `kept` files already in the chat) to its end or its
        pause, inside the visitor's concurrent-run place. False if it did not start."""
        started: list[bool] = []

        def steps() -> Iterator[tuple]:
            if session.start_run(task, list(files), settings, kept):
                started.append(True)
                for _ in session.drain():
                    pass
            yield ()

        for _ in self.services.gate.limited(steps(), request, session):
            pass
        return bool(started)

    @staticmethod
    def pending(session: Session, decision_id: Any) -> ev.DecisionRequested | None:
        """The decision the session's run waits for, if it has this id."""
        pending = session.pending_request()
        return pending if pending is not None and pending.request_id == decision_id else None

    def resolve(self, session: Session, pending: ev.DecisionRequested, made: Decision, answer: str) -> None:
        """Answer the pending decision (an answer goes into the transcript first), once: this caller takes the
        chat's lease and the request's id among all replicas (`ChatLeases.claim_decision`: a paused run holds no
        thread, so every replica that opened the chat could resume it), else LeaseRefused with why. The session's
        own refusal (made meanwhile, refused by the agent) passes on and frees the request; then `go_on`."""
        self.services.gate.check_message(decision_text(made, pending))  # the page's refusal: a message's length
        leases = self.services.leases
        why = leases.claim_decision(session.key, session, pending.request_id)
        if why is not None:
            raise LeaseRefused(why)
        if made.outcome.value == "answer":
            with session.lock:
                session.record.transcript.add_answer(pending.request_id, answer)
        try:
            session.resolve(pending, made)
        except Exception:
            leases.release_decision(pending.request_id)
            raise

    @staticmethod
    def go_on(session: Session) -> None:
        """Continue the run the answered decision paused, here, until it ends or waits again."""
        if session.claim_paused_run():
            for _ in session.drain():
                pass

    @staticmethod
    def state(session: Session, started: bool = True) -> RunState:
        with session.lock:
            saved = session.record.saved
            pending = session.pending_request()
            finished = session.record.transcript.finished
            messages = list(session.record.transcript.messages())
            steps = list(getattr(session.memory, "steps", []) or [])
        if not started:
            pending = finished = None
        return RunState(saved.id if saved is not None else None, pending, finished, messages, steps)
