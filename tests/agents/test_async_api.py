"""`arun`/`astream`: the same events as `run(stream=True)`, Stop by cancellation, approvals through the stream."""
from __future__ import annotations

import asyncio

from agents import CodeAgent, ReplayModel, ToolCallingAgent
from agents import events as ev
from agents.decisions import Decision
from agents.memory import TaskStep
from tests.agents.conftest import call, code

SCRIPT = [code("x = 6 * 7\nprint(x)"), code("final_answer(x)")]


def _classes(events):
    return [type(e) for e in events]


async def _collect(agent, task):
    return [event async for event in agent.astream(task)]


def test_astream_gives_the_events_of_a_streamed_run_in_the_same_order(tmp_path):
    with CodeAgent(tools=[], model=ReplayModel(SCRIPT), workdir=tmp_path / "a", verbosity=0) as agent:
        expected = list(agent.run("Compute.", stream=True))
    with CodeAgent(tools=[], model=ReplayModel(SCRIPT), workdir=tmp_path / "b", verbosity=0) as agent:
        got = asyncio.run(_collect(agent, "Compute."))
    assert _classes(got) == _classes(expected)
    assert got[-1].state == "success" and got[-1].output == 42


def test_arun_returns_what_run_returns():
    agent = ToolCallingAgent(tools=[], model=ReplayModel([call("final_answer", answer="four")]), verbosity=0)
    assert asyncio.run(agent.arun("2+2?")) == "four"
    agent = ToolCallingAgent(tools=[], model=ReplayModel([call("final_answer", answer="four")]), verbosity=0)
    result = asyncio.run(agent.arun("2+2?", return_result=True))
    assert result.state.value == "success" and result.output == "four" and result.steps


def test_many_agents_run_together_in_one_loop():
    async def main():
        agents = [ToolCallingAgent(tools=[], model=ReplayModel([call("final_answer", answer=str(i))]), verbosity=0)
                  for i in range(20)]
        return await asyncio.gather(*(agent.arun("which?") for agent in agents))

    assert asyncio.run(main()) == [str(i) for i in range(20)]


def test_an_approval_pause_is_answered_through_astream(tmp_path):
    async def main(agent):
        seen = []
        async for event in agent.astream("Compute."):
            seen.append(event)
            if isinstance(event, ev.DecisionRequested):
                agent.resolve_decision(event.request_id, Decision.approve())
        return seen

    with CodeAgent(tools=[], model=ReplayModel(SCRIPT), workdir=tmp_path, verbosity=0,
                   approval_policy="approve_code") as agent:
        events = asyncio.run(main(agent))
    requested = [e for e in events if isinstance(e, ev.DecisionRequested)]
    made = [e for e in events if isinstance(e, ev.DecisionMade)]
    assert len(requested) == 2 and [e.outcome for e in made] == ["approve", "approve"]
    assert events[-1].state == "success" and events[-1].output == 42


def test_cancelling_the_task_stops_the_run_and_records_it(tmp_path):
    async def main(agent):
        paused = asyncio.Event()

        async def consume():
            async for event in agent.astream("Compute."):
                if isinstance(event, ev.DecisionRequested):
                    paused.set()  # nobody answers: the run waits for a person

        task = asyncio.create_task(consume())
        await asyncio.wait_for(paused.wait(), 30)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return True
        return False

    with CodeAgent(tools=[], model=ReplayModel(SCRIPT), workdir=tmp_path, verbosity=0,
                   approval_policy="approve_code") as agent:
        assert asyncio.run(main(agent)) is True
        task_step = next(s for s in agent.memory.steps if isinstance(s, TaskStep))
        assert task_step.state == "interrupted"  # recorded by the time the cancellation returned
        assert not agent.pending_decisions()


def _png() -> bytes:
    import io

    from PIL import Image
    buffer = io.BytesIO()
    Image.new("RGB", (4, 3), "red").save(buffer, format="PNG")
    return buffer.getvalue()


def test_arun_and_astream_give_the_task_images_to_the_model(tmp_path):
    model = ReplayModel([call("final_answer", answer="a red square")])
    agent = ToolCallingAgent(tools=[], model=model, verbosity=0)
    assert asyncio.run(agent.arun("What is it?", images=[_png()])) == "a red square"
    urls = [part["image_url"]["url"] for part in model.calls[0][-1]["content"] if part.get("type") == "image_url"]
    assert len(urls) == 1 and urls[0].startswith("data:image/png;base64,")

    model = ReplayModel([code("final_answer('seen')")])
    with CodeAgent(tools=[], model=model, workdir=tmp_path, verbosity=0) as agent:
        events = asyncio.run(_collect_with_images(agent, "Describe.", [_png(), _png()]))
    assert events[-1].output == "seen"
    assert sum(part.get("type") == "image_url" for part in model.calls[0][-1]["content"]) == 2


async def _collect_with_images(agent, task, images):
    return [event async for event in agent.astream(task, images=images)]


def test_a_text_only_model_refuses_images_before_the_async_run_starts():
    import pytest

    from agents.errors import ImageRefusedError
    model = ReplayModel([call("final_answer", answer="x")], model_id="text-only", supports_images=False)
    agent = ToolCallingAgent(tools=[], model=model, verbosity=0)
    with pytest.raises(ImageRefusedError, match="'text-only' does not read images"):
        asyncio.run(agent.arun("Describe.", images=[_png()]))
    with pytest.raises(ImageRefusedError, match="does not read images"):
        agent.astream("Describe.", images=[_png()])  # refused when called, as run(stream=True) is
    assert model.calls == []


def test_managed_agents_run_inside_an_async_run_with_the_same_events():
    def team():
        leaf = ToolCallingAgent(tools=[], model=ReplayModel([call("final_answer", answer="leaf says 7")]), name="leaf",
                                description="Knows the number.", verbosity=0)
        model = ReplayModel([call("leaf", task="what is the number?"), call("final_answer", answer="top: 7")])
        return ToolCallingAgent(tools=[], model=model, managed_agents=[leaf], verbosity=0)

    expected = list(team().run("The number?", stream=True))
    got = asyncio.run(_collect(team(), "The number?"))
    assert _classes(got) == _classes(expected)
    assert got[-1].output == "top: 7"
    leaf_run = next(e for e in got if isinstance(e, ev.RunStarted) and e.agent_name == "leaf")
    leaf_call = next(e for e in got if isinstance(e, ev.ToolCallProposed) and e.tool_name == "leaf")
    assert leaf_run.parent_id == leaf_call.call_id


def test_a_paused_async_run_is_resumed_as_a_paused_run_is(tmp_path):
    """Pause mode through `arun`: the run ends PAUSED with the request kept in memory, as `run` ends it;
    `resume` carries it on from the recorded reply."""
    from agents.loop.result import RunState

    model = ReplayModel(SCRIPT)
    with CodeAgent(tools=[], model=model, workdir=tmp_path, verbosity=0, approval_policy="approve_code",
                   pause_on_decision=True) as agent:
        result = asyncio.run(agent.arun("Compute.", return_result=True))
        assert result.state is RunState.PAUSED and agent.memory.pending is not None
        assert agent.memory.pending.kind == "code" and "6 * 7" in agent.memory.pending.payload["code"]
        assert agent.resume(Decision.approve(), return_result=True).state is RunState.PAUSED  # the next code asks
        assert agent.resume(Decision.approve()) == 42
        assert len(model.calls) == 2  # each paused step acted from its recorded reply
