"""A paused run's decision, on the session side: which request is open, answering it, claiming the run again.

The agent pauses with a DecisionRequested event (agents/decisions); the session's drain stops there and
the streaming handler returns, so no web worker is held while a person decides. These functions are what
the panel's handlers (ui/panels/approvals.py), the session (a message that answers `ask_user`) and the app (a
closing tab) ask of a paused session. Also the approval mode a session's next runs get. No Gradio here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agents import events as ev
from agents.decisions import APPROVAL_MODES, ApprovalPolicy, Decision
from agents.errors import ConfigurationError

if TYPE_CHECKING:
    from ui.session.session import Session


def normalise_mode(mode: Any) -> str:
    return mode if mode in APPROVAL_MODES else "autonomous"


def apply_approval_mode(agent: Any, mode: str) -> None:
    """Give the agent (and its managed agents) the policy of `mode`. Only between runs: no thread reads it then."""
    agents = agent._agents_tree() if hasattr(agent, "_agents_tree") else [agent]
    for each in agents:
        broker = getattr(each, "broker", None)
        if broker is not None:
            broker.policy = ApprovalPolicy.from_mode(normalise_mode(mode))


def set_approval_mode(session: Session, mode: Any) -> None:
    """The tab's approval mode for its session's next runs (None leaves it as it is)."""
    if mode is None:
        return
    with session.lock:
        session.approval_mode = normalise_mode(mode)
        if session.agent is not None and not session.running:
            apply_approval_mode(session.agent, session.approval_mode)


def pending_request(session: Session) -> ev.DecisionRequested | None:
    """The decision the session's run is paused on and nobody has answered yet, else None."""
    with session.lock:
        run, agent = session.run, session.agent
        if run is None or run.finished or agent is None:
            return None
        waiting = run.waiting_decision
        if waiting is None or getattr(run, "answered", None) == waiting.request_id:
            return None
        try:
            pending_ids = {r.id for r in agent.pending_decisions()}
        except Exception:
            return None
        return waiting if waiting.request_id in pending_ids else None


def has_pending(session: Session) -> bool:
    return pending_request(session) is not None


def resolve(session: Session, request: ev.DecisionRequested, decision: Decision) -> None:
    """Answer `request`. Raises ConfigurationError if it expired. The chat shows the decision (and an edit)
    from the run's DecisionMade event, as a reopened chat does (ui/chat/render_decisions.py)."""
    with session.lock:
        if session.run is None or session.agent is None or session.run.answered == request.request_id:
            raise ConfigurationError("This decision was already made.")  # e.g. two quick clicks
        session.agent.resolve_decision(request.request_id, decision)
        session.run.answered = request.request_id
    session.touch()


def answer_question(session: Session, text: str) -> bool:
    """If the run waits for an answer to `ask_user`, `text` is that answer: resolve it. True if it was."""
    request = pending_request(session)
    if request is None or request.request_kind != "question" or not text.strip():
        return False
    with session.lock:
        session.transcript.add_answer(request.request_id, text)  # at once; its DecisionMade finds it shown
    resolve(session, request, Decision.reply(text))
    return True


def waiting_note(session: Session) -> str | None:
    """Why a new message cannot start a run now, when the run waits for a decision."""
    request = pending_request(session)
    if request is None:
        return None
    return ("✋ The agent is waiting for your decision in the panel under the chat: approve or reject it first "
            "(or press Stop). Your message was not sent to the agent.")


def resumable(session: Session) -> bool:
    """Claim a paused run whose decision was answered (or that was stopped) for a new drain."""
    with session.lock:
        run = session.run
        if run is None or run.finished or run.waiting_decision is None:
            return False
        if getattr(run, "answered", None) != run.waiting_decision.request_id and not run.stop_requested_at:
            return False
        run.waiting_decision = None  # claimed: a second resume finds nothing to do
        return True
