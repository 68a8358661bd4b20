"""Managed agents: called like tools, three levels deep, events nested under the call that started them."""
from __future__ import annotations

import pytest

from agents import CodeAgent, ReplayModel, ToolCallingAgent
from agents import events as ev
from agents.errors import ConfigurationError
from tests.agents.conftest import call, code


def _three_levels():
    leaf_model = ReplayModel([call("final_answer", answer="leaf says 7")])
    leaf = ToolCallingAgent(tools=[], model=leaf_model, name="leaf", description="Knows the number.", verbosity=0)
    mid_model = ReplayModel([call("leaf", task="what is the number?"),
                             call("final_answer", answer="mid relays: leaf says 7")])
    mid = ToolCallingAgent(tools=[], model=mid_model, name="mid", description="Asks leaf.", managed_agents=[leaf],
                           verbosity=0)
    top_model = ReplayModel([call("mid", task="find the number"), call("final_answer", answer="top: 7")])
    top = ToolCallingAgent(tools=[], model=top_model, managed_agents=[mid], verbosity=0)
    return top, (top_model, mid_model, leaf_model)


def test_three_level_run_nests_events():
    top, (top_model, mid_model, leaf_model) = _three_levels()
    events = list(top.run("what is the number?", stream=True))
    assert events[-1].kind == "run_finished" and events[-1].output == "top: 7"
    runs = {}
    for event in events:
        if isinstance(event, ev.RunStarted):
            runs[event.agent_name] = event
    assert set(runs) == {"ToolCallingAgent", "mid", "leaf"}
    top_call = next(e for e in events if isinstance(e, ev.ToolCallProposed) and e.tool_name == "mid")
    mid_call = next(e for e in events if isinstance(e, ev.ToolCallProposed) and e.tool_name == "leaf")
    assert runs["ToolCallingAgent"].parent_id is None
    assert runs["mid"].parent_id == top_call.call_id
    assert runs["leaf"].parent_id == mid_call.call_id
    assert mid_call.run_id == runs["mid"].run_id
    # Each sub-run's events stream between the call and its result, in order.
    index_call = events.index(top_call)
    index_result = next(i for i, e in enumerate(events)
                        if isinstance(e, ev.ToolCallResult) and e.call_id == top_call.call_id)
    assert index_call < events.index(runs["mid"]) < events.index(runs["leaf"]) < index_result
    # The managed agents got their task wrapped by the template and the report came back up.
    leaf_task = leaf_model.calls[0][-1]["content"]
    assert "find the number" in leaf_task or "what is the number" in leaf_task
    assert "leaf says 7" in mid_model.calls[1][-1]["content"]
    assert "mid relays" in top_model.calls[1][-1]["content"]


def test_code_agent_calls_managed_agent_from_code(tmp_path):
    helper_model = ReplayModel([call("final_answer", answer="42 apples")])
    helper = ToolCallingAgent(tools=[], model=helper_model, name="counter", description="Counts apples.", verbosity=0)
    model = ReplayModel([code("report = counter(task='count the apples')\nprint(report)"),
                         code("final_answer(report.splitlines()[-1])")])
    with CodeAgent(tools=[], model=model, managed_agents=[helper], workdir=tmp_path, verbosity=0) as agent:
        events = list(agent.run("How many apples?", stream=True))
    assert events[-1].output == "42 apples"
    call_event = next(e for e in events if isinstance(e, ev.ToolCallProposed))
    sub_start = next(e for e in events if isinstance(e, ev.RunStarted) and e.agent_name == "counter")
    assert sub_start.parent_id == call_event.call_id
    assert "counter(task: string" in model.calls[0][0]["content"]


def test_managed_agent_needs_name_and_description():
    nameless = ToolCallingAgent(tools=[], model=ReplayModel(["x"]), verbosity=0)
    with pytest.raises(ConfigurationError, match="name"):
        ToolCallingAgent(tools=[], model=ReplayModel(["x"]), managed_agents=[nameless])


def test_failing_managed_agent_is_an_observation():
    broken = ToolCallingAgent(tools=[], model=ReplayModel([]), name="broken", description="Fails.", verbosity=0)
    top_model = ReplayModel([call("broken", task="do it"), call("final_answer", answer="handled")])
    top = ToolCallingAgent(tools=[], model=top_model, managed_agents=[broken], verbosity=0)
    assert top.run("t") == "handled"
    assert "Managed agent 'broken' failed" in top_model.calls[1][-1]["content"]


def test_an_approval_policy_reaches_every_managed_agent():
    """The UI switches the approval mode between runs through this one method, for the whole tree."""
    top, _ = _three_levels()
    top.set_approval_policy("approve_code")
    mid = top.managed_agents["mid"]
    leaf = mid.managed_agents["leaf"]
    assert all(agent.broker.policy.approve_code for agent in (top, mid, leaf))
    top.set_approval_policy("autonomous")
    assert not any(agent.broker.policy.approve_code for agent in (top, mid, leaf))
