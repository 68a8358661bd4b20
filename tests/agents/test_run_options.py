"""Run-level settings (issue 32): `run(task, max_steps=..., planning_interval=..., approval_policy=..., tools=...)`
apply to that run only, on run, run(stream=True), arun and astream, with the same agent, model and sandbox."""
from __future__ import annotations

import asyncio

import pytest

from agents import ReplayModel, tool
from agents import events as ev
from agents.decisions import Decision, ScriptedDecider
from agents.errors import ConfigurationError
from tests.agents.conftest import call, code

PLAN = "1. Compute.\n2. Answer.<end_plan>"


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return f"value of {key}"


@tool
def shout(text: str) -> str:
    """Shout a text.

    Args:
        text: The text.
    """
    return text.upper()


def _planning_calls(model: ReplayModel) -> int:
    """How many of the model's calls were planning calls (sent the initial-plan prompt, which asks for a plan)."""
    return sum(1 for messages in model.calls if len(messages) == 1 and "<end_plan>" in str(messages[0]["content"]))


def test_max_steps_applies_to_one_run_only(make_code_agent) -> None:
    agent, model = make_code_agent([code("x = 1"), code("x += 1"), "best guess: 2",
                                    code("x += 1"), code("final_answer(x)")], max_steps=5)
    result = agent.run("Count.", max_steps=2, return_result=True)
    assert result.state.value == "max_steps" and len([s for s in result.steps if s.step_type == "action"]) == 2
    sandbox = agent.sandbox
    assert agent.run("Go on.", reset=False) == 3  # the agent's own limit again; same sandbox, variables kept
    assert agent.max_steps == 5 and agent.sandbox is sandbox
    task_steps = [s for s in agent.memory.steps if s.step_type == "task"]
    assert [s.max_steps for s in task_steps] == [2, 5]


def test_planning_interval_per_run_and_zero_turns_it_off(make_code_agent) -> None:
    agent, model = make_code_agent([PLAN, code("final_answer(1)"), code("final_answer(2)"),
                                    PLAN, code("final_answer(3)")], planning_interval=None)
    assert agent.run("One, planned.", planning_interval=3) == 1
    assert _planning_calls(model) == 1
    assert agent.run("Two, unplanned.", reset=False) == 2  # the agent's own: none
    assert _planning_calls(model) == 1 and agent.planning_interval is None
    agent.planning_interval = 4
    assert agent.run("Three, planned by the agent's own interval.", reset=False) == 3
    assert _planning_calls(model) == 2
    with pytest.raises(ConfigurationError):
        agent.run("Bad.", planning_interval=-1)


def test_zero_planning_interval_overrides_the_agents(make_code_agent) -> None:
    agent, model = make_code_agent([code("final_answer('no plan')")], planning_interval=1)
    assert agent.run("No plan this time.", planning_interval=0) == "no plan"
    assert _planning_calls(model) == 0 and agent.planning_interval == 1


def test_approval_policy_for_one_run(make_code_agent) -> None:
    decider = ScriptedDecider([Decision.approve()])
    agent, model = make_code_agent([code("final_answer('asked')"), code("final_answer('not asked')")],
                                   decider=decider)
    assert agent.run("Ask me first.", approval_policy="approve_code") == "asked"
    assert [r.kind.value for r in decider.requests] == ["code"]
    assert agent.run("Go.", reset=False) == "not asked"  # the agent's own policy (autonomous) again
    assert len(decider.requests) == 1 and not agent.broker.policy.approve_code


def test_tools_offered_per_run(make_tool_agent) -> None:
    agent, model = make_tool_agent([call("shout", text="hi"), call("final_answer", answer="done"),
                                    call("shout", text="hi"), call("final_answer", answer="shouted")],
                                   tools=[lookup, shout])
    result = agent.run("Only lookup.", tools=["lookup"], return_result=True)
    system = str(model.calls[0][0]["content"])
    assert "lookup" in system and "shout" not in system
    step = result.steps[1]
    assert step.error and "Unknown tool 'shout'" in step.error  # not offered in this run: refused
    assert agent.run("All tools.", reset=False) == "shouted"  # the next run offers the agent's tools again
    assert "shout" in str(model.calls[2][0]["content"])
    with pytest.raises(ConfigurationError, match="no tool named 'nope'"):
        agent.run("Unknown.", tools=["nope"])


def test_code_offers_only_the_runs_tools(make_code_agent) -> None:
    agent, _ = make_code_agent([code("print(shout('hi'))"), code("final_answer(lookup('k'))")],
                               tools=[lookup, shout])
    result = agent.run("Use lookup only.", tools=["lookup"], return_result=True)
    assert result.output == "value of k"
    assert "unknown tool 'shout'" in (result.steps[1].error or "")


def test_arun_and_astream_take_the_same_settings(make_code_agent) -> None:
    agent, model = make_code_agent([code("x = 1"), "guess", PLAN, code("final_answer('streamed')"),
                                    code("y = 1"), "another guess"], max_steps=5)
    result = asyncio.run(agent.arun("Async, one step.", max_steps=1, return_result=True))
    assert result.state.value == "max_steps"

    async def collect() -> list[ev.Event]:
        return [e async for e in agent.astream("Planned.", reset=False, planning_interval=5)]

    events = asyncio.run(collect())
    assert any(isinstance(e, ev.PlanProposed) for e in events) and events[-1].output == "streamed"
    streamed = list(agent.run("One step, streamed.", stream=True, reset=False, max_steps=1))
    assert streamed[-1].state == "max_steps" and streamed[-1].output == "another guess"
    assert agent.max_steps == 5 and agent.planning_interval is None
    with pytest.raises(ConfigurationError):
        agent.astream("Bad.", max_steps=0)
