"""A decision's time is from when a page first showed it to the person's decision (issue 31 review: the chat said
3.4 s for 2.0 s between the panel showing and the click). It counted from the agent's request, made before the
paused run's end reached any page, to the resumed run reaching the request, after the click.

The clock here is the record's: a paused run's request is given times (asked at T, shown at T + 1.4, taken at
T + 3.4) and the resumed run's decision must say 2.0 s, in its record, in its event and in the replayed event.
"""
from __future__ import annotations

import pytest

from agents import events as ev
from agents import step_events, tool
from agents.decisions import Decision
from agents.decisions.pending import PendingDecision, waited_s
from agents.decisions.types import DecisionKind, DecisionRequest, first_showing
from agents.loop.result import RunState
from tests.agents.conftest import call

T = 1_700_000_000.0
#: How close two times computed from T agree (a float near T is exact to about 2e-7 s).
EXACT = 1e-6


@tool(requires_approval=True)
def send_note(text: str) -> str:
    """Send a note.

    Args:
        text: The note.
    """
    return f"sent {text}"


def _record(**times: float) -> PendingDecision:
    return PendingDecision(request_id="r", kind="code", payload={"code": "x = 1"}, run_id="run", step_number=1,
                           **times)


def test_the_wait_is_from_the_first_showing_else_from_the_request() -> None:
    assert waited_s(T, T + 1.4, T + 3.4) == pytest.approx(2.0, abs=EXACT)
    assert waited_s(T, 0.0, T + 3.4) == pytest.approx(3.4, abs=EXACT)  # never shown (decided over the API)
    assert waited_s(T, T + 5.0, T + 3.4) == 0.0  # never negative


def test_the_earliest_of_several_showings_is_kept_and_none_after_the_decision() -> None:
    pending = _record(asked_at=T)
    pending.mark_shown(T + 2.0)  # one tab's refresh
    pending.mark_shown(T + 2.5)  # another tab's, later
    assert pending.shown_at == T + 2.0
    pending.mark_shown(T + 1.4)  # a tab that showed it earlier, whose report came last
    assert pending.shown_at == T + 1.4
    pending.taken_at = T + 3.4
    pending.mark_shown(T + 1.0)  # decided: nothing changes
    assert pending.shown_at == T + 1.4
    assert first_showing(0.0, T) == T and first_showing(T, 0.0) == T and first_showing(0.0, 0.0) == 0.0
    request = DecisionRequest("r", DecisionKind.CODE, {})
    request.mark_shown(T + 2.0)
    request.mark_shown(T + 1.4)
    assert request.shown_at == T + 1.4


def test_the_showing_is_saved_with_the_pending_record_and_only_a_time_is_read() -> None:
    pending = _record(asked_at=T)
    assert "shown_at" not in pending.to_dict()  # a record never shown is saved as before
    pending.mark_shown(T + 1.4)
    again = PendingDecision.from_dict(pending.to_dict())
    assert again.shown_at == T + 1.4 and again.asked_at == T  # the request's own time is left as it was
    for bad in (-1.0, float("nan"), "1", True):
        with pytest.raises(ValueError, match="shown time is malformed"):
            PendingDecision.from_dict({**pending.to_dict(), "shown_at": bad})


def _paused(make_tool_agent):
    agent, _ = make_tool_agent([call("send_note", text="n"), call("final_answer", answer="done")],
                               tools=[send_note], approval_policy="approve_tools", pause_on_decision=True)
    assert agent.run("t", return_result=True).state is RunState.PAUSED
    return agent


def _decide(agent) -> tuple[ev.DecisionMade, dict]:
    """Resume with an approval: the decision's event and the step's record of it."""
    made = [e for e in agent.resume(Decision.approve(), stream=True) if isinstance(e, ev.DecisionMade)]
    assert len(made) == 1
    step = next(s for s in agent.memory.action_steps() if s.decisions)
    return made[0], step.decisions[0]


@pytest.mark.parametrize(("shown", "expected"), [((1.4,), 2.0), ((), 3.4), ((2.0, 1.4, 3.0), 2.0)],
                         ids=["shown", "never-shown", "shown-in-three-tabs"])
def test_a_resumed_decision_records_the_wait_from_its_first_showing(make_tool_agent, shown, expected) -> None:
    agent = _paused(make_tool_agent)
    pending = agent.memory.pending
    pending.asked_at = T  # the clock: asked at T, shown at T + each showing, decided (the click) at T + 3.4
    for at in shown:
        pending.mark_shown(T + at)
    pending.taken_at = T + 3.4  # as the app's click records it before the resume (ui/session/run_control.py)
    made, record = _decide(agent)
    assert made.waited_s == pytest.approx(expected, abs=EXACT)
    assert made.timestamp == T + 3.4  # made at the click, not when the resumed run reached the request
    assert record["waited_s"] == made.waited_s and record["asked_at"] == T
    # A reopened chat replays the step's record: the same decision, the same wait.
    fields = {"run_id": made.run_id, "step": made.step, "parent_id": made.parent_id}
    replayed = step_events.decision_made(record, "tool_call", "approve", fields)
    assert replayed == made


def test_a_decision_a_runs_thread_waits_for_counts_from_its_showing(make_tool_agent) -> None:
    """A run that waits in its thread (no pause mode): a page marks the waiting request shown (the requests
    `pending_decisions` gives, as ui/session/pending_decisions.py `mark_shown` does), then the answer comes."""
    agent, _ = make_tool_agent([call("send_note", text="n"), call("final_answer", answer="done")],
                               tools=[send_note], approval_policy="approve_tools")
    made: list[ev.DecisionMade] = []
    for event in agent.run("t", stream=True):
        if isinstance(event, ev.DecisionRequested):
            [request] = agent.pending_decisions()
            request.mark_shown(request.asked_at + 0.25)  # shown a quarter second after it was asked
            request.mark_shown(request.asked_at + 0.5)  # and later in another tab
            agent.resolve_decision(event.request_id, Decision.approve())
        elif isinstance(event, ev.DecisionMade):
            made.append(event)
    record = next(s for s in agent.memory.action_steps() if s.decisions).decisions[0]
    assert record["shown_at"] == record["asked_at"] + 0.25
    assert made[0].waited_s == record["waited_s"] == max(0.0, record["decided_at"] - record["shown_at"])
