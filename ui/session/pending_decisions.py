"""A paused run's decision: which approval mode a run gets, and which request of a paused run is still open.

The app's agents pause by ending the run (`pause_on_decision`, agents/decisions/pending.py): at a decision the
run's DecisionRequested comes, then its end; the memory holds the pending request and is saved with the chat,
and neither a thread nor a web worker waits while a person decides. The answer resumes the run
(`agent.resume`) on whichever replica holds the chat then, after a restart too. A decision asked inside a
managed agent still waits in the run's thread (`open_request`: answered with `resolve_decision`). The session
answers for its paused run (`Session.pending_request`, `Session.resolve`, `Session.claim_paused_run`, which its
RunControl does: ui/session/run_control.py); these are the pieces it uses that need no session. No Gradio here.
"""
from __future__ import annotations

import json
from typing import Any

from agents import events as ev
from agents.decisions import APPROVAL_MODES, ApprovalPolicy, Decision
from agents.loop.base import MultiStepAgent
from agents.memory import ActionStep, PlanningStep, TaskStep
from agents.memory.memory import STOPPED_BEFORE_RUN, STOPPED_STEP
from agents.memory.steps import Timing
from agents.models.base import TokenUsage
from ui.session.run_stream import RunHandle

TAKEN_NOTE = ("⚠️ **The run stopped after you approved this step; its code may have run** (look at the workspace "
              "before you ask for it again). The decision is not offered again; variables are rebuilt. Send a "
              "message to continue.")
WAITING_NOTE = ("✋ The agent is waiting for your decision in the panel under the chat: approve or reject it first "
                "(or press Stop). Your message was not sent to the agent.")


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str) if value is not None else ""


def decision_text(decision: Decision, request: ev.DecisionRequested) -> str:
    """What a person's decision on `request` adds to the chat's memory (and so to every later prompt): its reason,
    its answer, and its edit (a tool call's arguments as JSON) where that is longer than what the agent proposed
    (the agent's own code may be longer than a message). The fronts hold it to the message limit, as a message."""
    payload = request.payload or {}
    proposed = _as_text(payload.get("arguments") if request.request_kind == "tool_call"
                        else payload.get(request.request_kind))
    edited = _as_text(decision.edited)
    if len(edited) <= len(proposed):
        edited = ""
    return "\n".join(part for part in (edited, decision.reason, decision.answer) if part)


#: How deep an edited tool call's arguments may nest: they are saved with the chat and sent to the model whole, and
#: a value nested past the interpreter's recursion limit could be neither (the parser stops near 1000 levels).
MAX_ARGUMENT_DEPTH = 32
TOO_DEEP = f"The arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels."


def too_deep(value: Any, limit: int = MAX_ARGUMENT_DEPTH) -> bool:
    """Whether lists and objects in `value` nest deeper than `limit` (walked without recursion)."""
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                if depth + 1 > limit:
                    return True
                todo.append((child, depth + 1))
    return False


def edited_arguments(text: Any) -> dict[str, Any]:
    """An edited tool call's arguments from the JSON text a person sent; ValueError saying what to fix (the text may
    be anything a client sends: not text, not JSON, not an object, nested past what the parser takes)."""
    if not isinstance(text, str):
        raise ValueError('The arguments must be JSON text, like {"name": "value"}.')
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"The arguments are not valid JSON ({exc.msg}, line {exc.lineno} column "
                         f"{exc.colno}).") from exc
    except RecursionError:
        raise ValueError(TOO_DEEP) from None
    if not isinstance(value, dict):
        raise ValueError('The arguments must be a JSON object, like {"name": "value"}.')
    if too_deep(value):
        raise ValueError(TOO_DEEP)
    return value


def normalise_mode(mode: Any) -> str:
    return mode if mode in APPROVAL_MODES else "autonomous"


def apply_approval_mode(agent: Any, mode: str) -> None:
    """Give the agent (and its managed agents) the policy of `mode`. Only between runs: no thread reads it then."""
    if isinstance(agent, MultiStepAgent):  # (tests' stand-in agents have no policy)
        agent.set_approval_policy(ApprovalPolicy.from_mode(normalise_mode(mode)))


def pauses(agent: Any) -> bool:
    """Whether `agent` ends its runs at a decision instead of holding their thread (pause mode)."""
    return bool(getattr(agent, "pause_on_decision", False))


def drop_pending(memory: Any) -> bool:
    """Stop on a run that ended at a decision: forget the request and record the run as stopped in `memory` (so
    a reopened chat shows it stopped). False when no decision waits there."""
    pending = getattr(memory, "pending", None)
    if pending is None:
        return False
    memory.pending = None
    stopped = _paused_step(pending, taken=bool(getattr(pending, "taken_at", 0.0)))
    for step in reversed(memory.steps):
        if isinstance(step, TaskStep) and step.run_id == pending.run_id:
            step.state = "interrupted"
            if stopped is not None:
                step.end_step = max(step.end_step or 0, stopped.step_number)
            break
    if stopped is not None:  # the step the decision paused, as the live chat showed it: kept when it reopens
        memory.add_step(stopped)
    return True


def settle_taken(memory: Any) -> bool:
    """A reopened chat whose paused run's decision was taken (saved as taken before its step acted) but whose
    step never saved its end: the process stopped in between, and the approved code may have run. The request
    is dropped and the run recorded as stopped (`drop_pending`), so the decision is not offered again and its
    code cannot run twice. True if so (the caller shows `TAKEN_NOTE`)."""
    pending = getattr(memory, "pending", None)
    if pending is None or not getattr(pending, "taken_at", 0.0):
        return False
    return drop_pending(memory)


def _paused_step(pending: Any, taken: bool = False) -> ActionStep | PlanningStep | None:
    """The step a paused run was deciding on, recorded as stopped: a plan with its text, a code step with the
    model's reply and the code it proposed (never run). The paused step is not in memory while it waits (the
    resume acts it again from the recorded reply), so without this a reopened chat lost it. `taken`: the decision
    was made and the step may have acted before the process stopped (`settle_taken`); else its code never ran."""
    usage = TokenUsage(int(pending.reply_input_tokens or 0), int(pending.reply_output_tokens or 0))
    asked = float(pending.asked_at or 0.0)
    timing = Timing(asked, asked)
    reply = str(pending.reply_content or "")
    payload = pending.payload if isinstance(pending.payload, dict) else {}
    if pending.kind == "plan":
        plan = payload.get("plan")
        return PlanningStep(step_number=int(pending.step_number), plan=plan if isinstance(plan, str) else reply,
                            model_output=reply, token_usage=usage, timing=timing,
                            model_duration_s=float(pending.reply_model_s or 0.0))
    if pending.kind == "code" or reply:
        code = payload.get("code") if pending.kind == "code" else None
        return ActionStep(step_number=int(pending.step_number), run_id=str(pending.run_id), model_output=reply,
                          code=code if isinstance(code, str) else None,
                          error=STOPPED_STEP if taken else STOPPED_BEFORE_RUN, stopped=True,
                          token_usage=usage, timing=timing, model_duration_s=float(pending.reply_model_s or 0.0))
    return None


def open_request(run: RunHandle | None, agent: Any) -> ev.DecisionRequested | None:
    """The decision `run` is paused on, if nobody has answered it yet and `agent` still waits for it."""
    if run is None or run.finished or agent is None:
        return None
    waiting = run.waiting_decision
    if waiting is None or run.answered == waiting.request_id:
        return None
    try:
        pending_ids = {r.id for r in agent.pending_decisions()}
    except Exception:
        return None
    return waiting if waiting.request_id in pending_ids else None


def mark_shown(agent: Any, memory: Any, request_id: str, when: float) -> None:
    """A page shows the decision `request_id` at `when`: the request keeps its first showing, from which the
    person's time to decide counts (agents/decisions/pending.py `waited_s`), not from the agent's request, made
    before the run's end reached any page. Marked on the paused run's pending record (`memory.pending`), or on
    the request a run's thread waits on; the request's own time is left as it was (its event replays the same)."""
    pending = getattr(memory, "pending", None)
    if pending is not None and pending.request_id == request_id:
        pending.mark_shown(when)
    waiting = getattr(agent, "pending_decisions", None)
    for request in waiting() if waiting is not None else ():
        if request.id == request_id:
            request.mark_shown(when)


def claim_for_resume(run: RunHandle | None) -> bool:
    """Claim a paused run whose decision was answered (or that was stopped) for a new drain: True once."""
    if run is None or run.finished or run.waiting_decision is None:
        return False
    if run.answered != run.waiting_decision.request_id and not run.stop_requested_at:
        return False
    run.waiting_decision = None  # claimed: a second resume finds nothing to do
    return True


def saved_request(agent: Any, kept_memory: Any) -> ev.DecisionRequested | None:
    """The decision a saved chat's run waited for when it was saved (the server restarted since): its memory's
    pending record (agents/decisions/pending.py), answered with `agent.resume`. None when none waits."""
    memory = getattr(agent, "memory", None) if agent is not None else kept_memory
    pending = getattr(memory, "pending", None)
    if pending is None or pending.taken_at:  # taken: being resumed, or its resume stopped (`settle_taken`)
        return None
    return ev.DecisionRequested(run_id=pending.run_id, step=pending.step_number, parent_id=None,
                                request_id=pending.request_id, request_kind=pending.kind,
                                payload=dict(pending.payload))
