"""The chat's time for a decision ("✋ Decision: approve (2.0s)") is the wait its DecisionMade event recorded
(from the panel's first showing to the click, agents/decisions/pending.py `waited_s`), not the time between the
request's and the decision's events: the request is made before the paused run's end reaches any page (issue 31
review: 3.4 s shown for 2.0 s). A chat saved before decisions recorded their wait shows what it showed then."""
from __future__ import annotations

from test_ui_render import base, by_title

from agents import events as ev
from ui.chat.render import Transcript


def _decided(waited_s: float | None) -> float:
    t = Transcript()
    t.apply(ev.DecisionRequested(**base(1, t=100.0), request_id="r1", request_kind="code", payload={"code": "x"}))
    t.apply(ev.DecisionMade(**base(1, t=103.4), request_id="r1", request_kind="code", outcome="approve",
                            waited_s=waited_s))
    return by_title(t.messages(), "✋ Decision: approve")["metadata"]["duration"]


def test_the_decisions_time_is_the_wait_it_recorded() -> None:
    assert _decided(2.0) == 2.0


def test_a_decision_saved_without_its_wait_counts_from_its_request() -> None:
    assert _decided(None) == 3.4
