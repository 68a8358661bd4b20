"""ToolCallingAgent specifics: parallel independent calls, native tool calls, errors fed back."""
from __future__ import annotations

import threading

from agents import ReplayModel, ToolCallingAgent, tool
from agents import events as ev
from tests.agents.conftest import call


def test_independent_calls_in_one_reply_run_in_parallel():
    barrier = threading.Barrier(2, timeout=10)  # only passes if both calls are running at the same time

    @tool
    def meet(who: str) -> str:
        """Wait for the other call.

        Args:
            who: Who is waiting.
        """
        barrier.wait()
        return f"{who} met"

    reply = call("meet", who="a") + "\n" + call("meet", who="b")
    model = ReplayModel([reply, call("final_answer", answer="both met")])
    agent = ToolCallingAgent(tools=[meet], model=model, verbosity=0)
    assert agent.run("t") == "both met"
    observation = model.calls[1][-1]["content"]
    assert "a met" in observation and "b met" in observation


def test_native_tool_calls_are_used_and_schemas_sent():
    @tool
    def double(x: int) -> int:
        """Double a number.

        Args:
            x: The number.
        """
        return 2 * x

    model = ReplayModel([{"content": "", "tool_calls": [{"name": "double", "arguments": {"x": 21}}]},
                         {"content": "", "tool_calls": [{"name": "final_answer", "arguments": {"answer": 42}}]}])
    assert model.supports_native_tools
    sent_tools = []
    original = model.generate_stream

    def spy(messages, stop_sequences=None, tools=None, **kwargs):
        sent_tools.append(tools)
        return original(messages, stop_sequences=stop_sequences, tools=tools, **kwargs)

    model.generate_stream = spy
    agent = ToolCallingAgent(tools=[double], model=model, verbosity=0)
    events = list(agent.run("t", stream=True))
    assert events[-1].output == 42
    names = {schema["function"]["name"] for schema in sent_tools[0]}
    assert names == {"double", "final_answer"}
    results = [e for e in events if isinstance(e, ev.ToolCallResult)]
    assert results[0].tool_name == "double" and results[0].output == "42"


def test_bad_arguments_and_unknown_tools_are_fed_back():
    @tool
    def double(x: int) -> int:
        """Double a number.

        Args:
            x: The number.
        """
        return 2 * x

    model = ReplayModel([call("double", x="ten"), call("triple", x=1), call("final_answer", answer=0)])
    agent = ToolCallingAgent(tools=[double], model=model, verbosity=0)
    assert agent.run("t") == 0
    assert "should be of type integer" in model.calls[1][-1]["content"]
    assert "Unknown tool 'triple'" in model.calls[2][-1]["content"]
