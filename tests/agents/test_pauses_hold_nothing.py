"""Pause mode beyond one decision (issue 28): `arun` ends at a decision and `aresume` goes on, so more runs than
the async driver has pool threads can wait for people at once; a plan review pauses and resumes like an action
step; the run's own approval policy and tools come back with the resume, in a fresh agent too."""
from __future__ import annotations

import asyncio
import threading

from agents import tool
from agents.decisions import Decision
from agents.events import DecisionMade, RunFinished
from agents.loop.async_api import aresume, astream_resume
from agents.loop.async_driver import STEP_THREADS
from agents.loop.restore import restore_agent_memory
from agents.loop.result import RunState
from agents.memory.serialize import dumps_memory, loads_memory
from tests.agents.conftest import call

SECRET = b"p" * 32
SENT: list[str] = []


@tool(requires_approval=True)
def post(text: str) -> str:
    """Post a message.

    Args:
        text: The message.
    """
    SENT.append(text)
    return f"posted {text}"


def test_more_paused_async_runs_than_pool_threads_all_resume(make_tool_agent) -> None:
    SENT.clear()
    count = STEP_THREADS + 8  # waiting in their pool threads, the last 8 could not even start their first step
    agents = [make_tool_agent([call("post", text=f"n{i}"), call("final_answer", answer=f"done {i}")], tools=[post],
                              approval_policy="approve_tools", pause_on_decision=True)[0] for i in range(count)]

    async def pause_all() -> list:
        return list(await asyncio.gather(*(a.arun("post it", return_result=True) for a in agents)))

    results = asyncio.run(pause_all())
    assert {r.state for r in results} == {RunState.PAUSED} and SENT == []
    assert all(a.memory.pending is not None and a.memory.pending.kind == "tool_call" for a in agents)
    assert not [t for t in threading.enumerate() if t.name.startswith("agent-run-")]

    async def answer_all() -> list:
        return list(await asyncio.gather(*(aresume(a, Decision.approve()) for a in agents)))

    assert asyncio.run(answer_all()) == [f"done {i}" for i in range(count)]
    assert sorted(SENT) == sorted(f"n{i}" for i in range(count))
    assert all(a.memory.pending is None for a in agents)


def test_astream_resume_streams_the_decision_and_the_rest_of_the_run(make_tool_agent) -> None:
    SENT.clear()
    agent, _ = make_tool_agent([call("post", text="hi"), call("final_answer", answer="ok")], tools=[post],
                               approval_policy="approve_tools", pause_on_decision=True)
    assert agent.run("t", return_result=True).state is RunState.PAUSED

    async def read() -> list:
        return [event async for event in astream_resume(agent, Decision.edit({"text": "edited"}))]

    events = asyncio.run(read())
    made = [e for e in events if isinstance(e, DecisionMade)]
    assert [m.outcome for m in made] == ["edit"] and SENT == ["edited"]
    assert isinstance(events[-1], RunFinished) and events[-1].state == "success" and events[-1].output == "ok"


def test_a_plan_review_pauses_and_a_fresh_agent_resumes_with_the_edited_plan(make_tool_agent) -> None:
    replies = ["1. Guess.\n2. Answer.<end_plan>", call("final_answer", answer="planned")]
    agent, _ = make_tool_agent(replies, approval_policy="review_plans", planning_interval=5, pause_on_decision=True)
    result = agent.run("plan it", return_result=True)
    assert result.state is RunState.PAUSED and agent.memory.pending is not None
    assert agent.memory.pending.kind == "plan" and agent.memory.pending.payload == {"plan": "1. Guess.\n2. Answer."}
    saved = dumps_memory(agent.memory, SECRET)

    fresh, model = make_tool_agent([call("final_answer", answer="planned")], approval_policy="review_plans",
                                   planning_interval=5, pause_on_decision=True)
    restore_agent_memory(fresh, loads_memory(saved, SECRET))
    assert fresh.resume(Decision.edit("1. Look it up.\n2. Answer.")) == "planned"
    assert len(model.calls) == 1  # the plan came from the record: only the action step asked the model
    prompt = "\n".join(str(m["content"]) for m in model.calls[0])
    assert "Look it up" in prompt and "Guess" not in prompt
    assert fresh.memory.latest_plan().plan.startswith("1. Look it up")


def test_the_run_own_policy_and_tools_come_back_with_the_resume(make_tool_agent) -> None:
    """The agent's own policy is autonomous; this run's asks for tool calls and offers only `post`: a fresh
    agent's resume still asks before the next call (and offers the same tools), as the paused run would have."""
    SENT.clear()
    replies = [call("post", text="one"), call("post", text="two"), call("final_answer", answer="both")]
    agent, _ = make_tool_agent(replies, tools=[post], pause_on_decision=True)
    result = agent.run("t", return_result=True, approval_policy="approve_tools", tools=["post"])
    assert result.state is RunState.PAUSED
    saved = dumps_memory(agent.memory, SECRET)

    fresh, _ = make_tool_agent(replies[1:], tools=[post], pause_on_decision=True)
    restore_agent_memory(fresh, loads_memory(saved, SECRET))
    again = fresh.resume(Decision.approve(), return_result=True)
    assert again.state is RunState.PAUSED and fresh.memory.pending.payload["arguments"] == {"text": "two"}
    assert fresh.memory.pending.tools == ["final_answer", "post"]
    assert fresh.resume(Decision.approve()) == "both" and SENT == ["one", "two"]


def test_a_managed_agent_decision_ends_the_manager_run_and_its_resume_grants_it(make_tool_agent) -> None:
    """No thread waits for a sub-agent's decision either: the manager's run ends with the request in its memory;
    a fresh manager (a new process's, on the loaded memory) calls the sub-agent again, which asks the same and is
    granted the answer."""
    SENT.clear()
    helper, _ = make_tool_agent([call("post", text="from the helper"), call("final_answer", answer="posted")],
                                tools=[post], name="helper", description="Posts things.")
    manager, _ = make_tool_agent([call("helper", task="post it")], managed_agents=[helper], pause_on_decision=True)
    result = manager.run("ask the helper", return_result=True, approval_policy="approve_tools")  # as the app does
    assert result.state is RunState.PAUSED and SENT == []
    pending = manager.memory.pending
    assert pending is not None and pending.kind == "tool_call"
    assert pending.payload["arguments"] == {"text": "from the helper"} and helper.memory.pending is None
    assert not [t for t in threading.enumerate() if t.name.startswith("agent-run-")]
    saved = dumps_memory(manager.memory, SECRET)

    # The sub-agent runs afresh on resume: its model is asked again (here it asks the same).
    fresh_helper, helper_model = make_tool_agent([call("post", text="from the helper"),
                                                  call("final_answer", answer="posted")],
                                                 tools=[post], name="helper", description="Posts things.")
    fresh, _ = make_tool_agent([call("final_answer", answer="the helper posted")], managed_agents=[fresh_helper],
                               pause_on_decision=True)
    restore_agent_memory(fresh, loads_memory(saved, SECRET))
    events: list = []
    stream = fresh.resume(Decision.edit({"text": "edited by me"}), stream=True)
    for event in stream:
        events.append(event)
    made = [e for e in events if isinstance(e, DecisionMade)]
    assert [(m.outcome, m.request_id, m.parent_id is not None) for m in made] == [("edit", pending.request_id, True)]
    assert SENT == ["edited by me"] and fresh.memory.pending is None
    assert isinstance(events[-1], RunFinished) and events[-1].output == "the helper posted"
    assert len(helper_model.calls) == 2


def test_a_step_paused_after_an_edit_reruns_the_edited_code_not_the_model_version(make_code_agent, tmp_path) -> None:
    """Approve each code step and each call: the person edits the code, the edited code calls a tool that pauses.
    The resume re-runs the step's code from its start: it must be the person's version (granted again as it was),
    not the model's asked anew."""
    SENT.clear()
    model_code = "final_answer(post(text='model version'))"
    agent, _ = make_code_agent([f"Thought: post.\n```python\n{model_code}\n```"], tools=[post], approval_policy="all",
                               pause_on_decision=True, workdir=tmp_path / "ws")
    assert agent.run("t", return_result=True).state is RunState.PAUSED
    assert agent.memory.pending.kind == "code"
    result = agent.resume(Decision.edit("final_answer(post(text='my version'))"), return_result=True)
    assert result.state is RunState.PAUSED and agent.memory.pending.kind == "tool_call"
    assert agent.memory.pending.payload["arguments"] == {"text": "my version"} and SENT == []
    saved = dumps_memory(agent.memory, SECRET)
    agent.close()

    fresh, model = make_code_agent([], tools=[post], approval_policy="all", pause_on_decision=True,
                                   workdir=tmp_path / "ws")
    restore_agent_memory(fresh, loads_memory(saved, SECRET))
    done = fresh.resume(Decision.approve(), return_result=True)
    assert done.state is RunState.SUCCESS and done.output == "posted my version", done
    assert SENT == ["my version"] and model.calls == []
    step = [s for s in fresh.memory.steps if getattr(s, "code", None)][-1]
    assert [(d["kind"], d["outcome"]) for d in step.decisions] == [("code", "edit"), ("tool_call", "approve")]
