"""Attacks on a resumed run's granted decision (agents/decisions/pending.py, `agent.resume`): the code of the
paused step runs again from its start with the person's answer given for "that exact request". Code (any code the
model writes) must not stretch that one answer over a second call, a call with other arguments, or a call in a
later step the person never saw asked."""
from __future__ import annotations

from agents.decisions import Decision
from agents.loop.restore import rebuild_sandbox_state, restore_agent_memory
from agents.loop.result import RunState
from agents.memory.serialize import dumps_memory, loads_memory
from agents.models.replay import ReplayModel
from tests.agents.conftest import code
from tests.agents.test_pending_decisions import SECRET, SENT, _clear, send_note  # noqa: F401 (_clear: autouse)


def _paused_then_fresh(make_code_agent, tmp_path, first: str, later: list[str]):
    """A run paused at the first `send_note` of `first`, saved, and a new agent on the same workspace and memory
    (as after a server restart) whose model answers `later`."""
    agent, _ = make_code_agent([code(first)], approval_policy="approve_tools", pause_on_decision=True,
                               workdir=tmp_path / "ws", tools=[send_note])
    result = agent.run("task", return_result=True)
    assert result.state is RunState.PAUSED and SENT == []
    saved = dumps_memory(agent.memory, SECRET)
    agent.close()
    fresh, _ = make_code_agent(ReplayModel([code(c) for c in later]), approval_policy="approve_tools",
                               pause_on_decision=True, workdir=tmp_path / "ws", tools=[send_note])
    restore_agent_memory(fresh, loads_memory(saved, SECRET))
    rebuild_sandbox_state(fresh.memory, fresh)
    return fresh


def test_the_same_approved_call_made_twice_is_asked_again(make_code_agent, tmp_path):
    fresh = _paused_then_fresh(make_code_agent, tmp_path,
                               "send_note(text='pay 10')\nsend_note(text='pay 10')\nfinal_answer('done')", [])
    result = fresh.resume(Decision.approve(), return_result=True)
    assert SENT == ["pay 10"] and result.state is RunState.PAUSED
    assert fresh.memory.pending is not None and fresh.memory.pending.payload["arguments"] == {"text": "pay 10"}


def test_an_approval_left_unused_by_the_rerun_does_not_carry_to_a_later_step(make_code_agent, tmp_path):
    """The code takes another way when it runs again (it left a mark on the workspace the first time), so the
    approved call is not made in the resumed step; the same call written in the next step is a new request the
    person must see, not one already answered."""
    first = ("try:\n    open('ran-once', 'x').close()\nexcept FileExistsError:\n    print('second time: no call')\n"
             "else:\n    send_note(text='pay 10')")
    fresh = _paused_then_fresh(make_code_agent, tmp_path, first, ["send_note(text='pay 10')\nfinal_answer('done')"])
    result = fresh.resume(Decision.approve(), return_result=True)
    assert SENT == [], "a call in a later step ran on the approval given for the paused step"
    assert result.state is RunState.PAUSED


def test_an_approval_is_not_taken_for_a_call_of_other_arguments_in_the_rerun(make_code_agent, tmp_path):
    """The rerun of the paused step changes its arguments (it reads a mark it left the first time): the approval
    of "pay 10" is no approval of "pay 1000"."""
    first = ("try:\n    open('ran-once', 'x').close()\nexcept FileExistsError:\n    amount = 1000\n"
             "else:\n    amount = 10\nsend_note(text=f'pay {amount}')")
    fresh = _paused_then_fresh(make_code_agent, tmp_path, first, [])
    assert fresh.memory.pending.payload["arguments"] == {"text": "pay 10"}
    result = fresh.resume(Decision.approve(), return_result=True)
    assert SENT == [] and result.state is RunState.PAUSED
    assert fresh.memory.pending.payload["arguments"] == {"text": "pay 1000"}
