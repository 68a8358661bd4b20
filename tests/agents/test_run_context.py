"""Per-run state travels in the run object (agents/loop/context.py), passed explicitly: a tool that needs its
run is handed it, and nothing of a finished run is left where a later call could pick it up."""
from __future__ import annotations

import pytest

from agents import Tool, tool
from agents import events as ev
from agents.errors import ToolError
from agents.tooling.context import ToolContext
from tests.agents.conftest import call, code


class WhereAmI(Tool):
    """A tool that declares it needs its run: it reports the call and the run it was handed."""

    name = "where_am_i"
    description = "Says which call and run it belongs to."
    inputs = {"label": {"type": "string", "description": "A label to echo."}}
    output_type = "string"
    takes_context = True

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, str, int]] = []

    def forward(self, label: str, context: ToolContext) -> str:
        self.seen.append((context.call_id, context.run.run_id, context.run.step))
        return f"{label}: call {context.call_id} of run {context.run.run_id}"


@pytest.mark.parametrize("kind", ["tool_calling", "code"])
def test_a_tool_that_takes_the_context_gets_its_call_and_run(kind, make_tool_agent, make_code_agent):
    where = WhereAmI()
    if kind == "tool_calling":
        agent, _ = make_tool_agent([call("where_am_i", label="here"), call("final_answer", answer="ok")], tools=[where])
    else:
        agent, _ = make_code_agent([code("print(where_am_i('here'))"), code("final_answer('ok')")], tools=[where])
    events = list(agent.run("t", stream=True))
    assert events[-1].output == "ok"
    proposed = next(e for e in events if isinstance(e, ev.ToolCallProposed))
    assert where.seen == [(proposed.call_id, proposed.run_id, 1)]
    assert proposed.arguments == {"label": "here"}  # the context is not one of the tool's inputs
    with pytest.raises(ToolError, match="only be used inside an agent run"):
        where("outside")  # called directly: there is no run to hand it


def test_code_cannot_reach_tools_through_a_finished_run(make_code_agent):
    """The sandbox outlives runs; between them its tools refuse instead of running in the last run's context."""
    calls = []

    @tool
    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: The key.
        """
        calls.append(key)
        return key.upper()

    agent, _ = make_code_agent([code("print(lookup('a'))"), code("final_answer('done')")], tools=[lookup])
    events = list(agent.run("t", stream=True))
    assert events[-1].output == "done" and calls == ["a"]
    result = agent.sandbox.run("lookup('b')")
    assert result.error and "outside of a run" in result.error and calls == ["a"]


def test_step_numbers_continue_across_follow_ups_and_restart_after_a_reset(make_tool_agent):
    """Each run has its own StepRunner; the conversation's step count is the agent's, carried between runs."""
    @tool
    def noop() -> str:
        """Do nothing."""
        return "nothing"

    agent, _ = make_tool_agent([call("noop"), call("final_answer", answer=1), call("final_answer", answer=2),
                                call("final_answer", answer=3)], tools=[noop])

    def action_steps(events) -> list[int]:
        return [e.step for e in events if isinstance(e, ev.StepStarted) and e.step_type == "action"]

    assert action_steps(agent.run("first", stream=True)) == [1, 2]
    assert action_steps(agent.run("follow-up", stream=True, reset=False)) == [3]
    assert [s.step_number for s in agent.memory.action_steps()] == [1, 2, 3]
    assert action_steps(agent.run("new task", stream=True)) == [1]
