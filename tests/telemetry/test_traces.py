"""Runs as OpenTelemetry traces (GenAI semantic conventions), built from the event stream."""
from __future__ import annotations

import functools

from agents import CodeAgent, ReplayModel, ToolCallingAgent, telemetry
from agents.decisions import Decision, ScriptedDecider
from agents.tooling import tool
from tests.agents.conftest import call, code


@tool
def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: the city's name.
    """
    return f"{city} has 3 parks"


def _by_name(spans):
    found = {}
    for span in spans:
        found.setdefault(span.name, []).append(span)
    return found


def _parent_of(span, spans):
    return next((s for s in spans if span.parent is not None and s.context.span_id == span.parent.span_id), None)


def test_code_agent_run_is_one_trace_with_steps_chat_sandbox_and_tool_spans(traced, tmp_path):
    exporter, provider = traced
    telemetry.instrument(tracer_provider=provider)
    model = ReplayModel([{"content": code("print(lookup(city='Oslo'))"), "token_usage":
                          {"input_tokens": 120, "output_tokens": 9}},
                         code("final_answer('three')")])
    with CodeAgent(tools=[lookup], model=model, workdir=tmp_path, verbosity=0) as agent:
        assert agent.run("How many parks in Oslo?") == "three"
    spans = exporter.get_finished_spans()
    names = _by_name(spans)
    assert len({s.context.trace_id for s in spans}) == 1
    (run,) = names["invoke_agent CodeAgent"]
    assert run.parent is None and run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["agentdeck.run.state"] == "success" and run.attributes["agentdeck.run.steps"] == 2
    steps = names["step 1"] + names["step 2"]
    assert all(_parent_of(s, spans) is run for s in steps)
    chats = names["chat replay"]
    assert len(chats) == 2 and chats[0].attributes["gen_ai.usage.input_tokens"] == 120
    assert chats[0].attributes["gen_ai.usage.output_tokens"] == 9
    assert _parent_of(chats[0], spans) is names["step 1"][0]
    sandboxes = names["execute_code"]
    assert len(sandboxes) == 2 and sandboxes[0].attributes["agentdeck.sandbox.state_lost"] is False
    assert sandboxes[0].attributes["agentdeck.sandbox.untrusted"] is False
    assert sandboxes[0].attributes["agentdeck.sandbox.backend"]
    (tool_span,) = names["execute_tool lookup"]
    assert _parent_of(tool_span, spans) is sandboxes[0]  # called from the sandboxed code
    assert tool_span.attributes["gen_ai.tool.name"] == "lookup"
    assert sandboxes[0].start_time <= tool_span.start_time <= tool_span.end_time <= sandboxes[0].end_time
    # Content is off by default: no task, reply, code or tool arguments anywhere.
    recorded = repr([dict(s.attributes) for s in spans])
    assert "Oslo" not in recorded and "print(" not in recorded


def test_content_is_recorded_only_when_turned_on(traced, tmp_path):
    exporter, provider = traced
    telemetry.instrument(tracer_provider=provider, record_content=True)
    model = ReplayModel([call("lookup", city="Oslo"), call("final_answer", answer="three")])
    agent = ToolCallingAgent(tools=[lookup], model=model, verbosity=0)
    agent.run("How many parks in Oslo?")
    names = _by_name(exporter.get_finished_spans())
    (run,) = names["invoke_agent ToolCallingAgent"]
    assert "How many parks in Oslo?" in run.attributes["gen_ai.input.messages"]
    assert "three" in run.attributes["gen_ai.output.messages"]
    (tool_span,) = names["execute_tool lookup"]
    assert "Oslo" in tool_span.attributes["gen_ai.tool.call.arguments"]
    assert "3 parks" in tool_span.attributes["gen_ai.tool.call.result"]


def test_managed_agent_run_nests_under_the_call_that_started_it(traced):
    exporter, provider = traced
    telemetry.instrument(tracer_provider=provider)
    helper = ToolCallingAgent(tools=[], model=ReplayModel([call("final_answer", answer="7")]), name="counter",
                              description="Counts.", verbosity=0)
    top = ToolCallingAgent(tools=[], model=ReplayModel([call("counter", task="count"),
                                                       call("final_answer", answer="7")]),
                           managed_agents=[helper], verbosity=0)
    top.run("count them")
    spans = exporter.get_finished_spans()
    names = _by_name(spans)
    (sub_run,) = names["invoke_agent counter"]
    (call_span,) = names["execute_tool counter"]
    assert _parent_of(sub_run, spans) is call_span
    assert _parent_of(_parent_of(call_span, spans), spans) is names["invoke_agent ToolCallingAgent"][0]


def test_decisions_are_events_saying_who_decided_and_how(traced, tmp_path):
    exporter, provider = traced
    telemetry.instrument(tracer_provider=provider)
    model = ReplayModel([code("x = 1"), code("final_answer('done')")])
    decider = ScriptedDecider([Decision.reject("not that"), Decision.approve()])
    with CodeAgent(tools=[], model=model, workdir=tmp_path, verbosity=0, approval_policy="approve_code",
                   decider=decider) as agent:
        agent.run("do it")
    names = _by_name(exporter.get_finished_spans())
    first = [e for e in names["step 1"][0].events if e.name == "decision"]
    assert [(e.attributes["agentdeck.decision.outcome"], e.attributes["agentdeck.decision.by"]) for e in first] \
        == [("reject", "script")]
    assert len(names["execute_code"]) == 1  # the rejected code never ran: no sandbox span for it
    second = [e for e in names["step 2"][0].events if e.name == "decision"]
    assert second[0].attributes["agentdeck.decision.outcome"] == "approve"


def test_no_observer_means_the_emit_function_is_unchanged():
    telemetry.uninstrument()

    def sink(event):
        return None

    assert telemetry.observe_run(object(), sink, None) is sink


def test_a_sandbox_that_lost_its_state_says_so_in_its_span(traced, tmp_path, monkeypatch):
    """Code that leaves a thread running: the worker is replaced after the step and its variables are gone."""
    import agents.executor

    # The sandbox with the Python layers off (as the attack suites run it), so the code may start a thread.
    monkeypatch.setattr(agents.executor, "PythonSandbox",
                        functools.partial(agents.executor.PythonSandbox, python_layers=False))
    exporter, provider = traced
    telemetry.instrument(tracer_provider=provider)
    spin = "import threading\ndef spin():\n    while True: pass\nthreading.Thread(target=spin, daemon=True).start()"
    model = ReplayModel([code(spin), "My best guess: it spins."])
    with CodeAgent(tools=[], model=model, workdir=tmp_path, verbosity=0, authorized_imports=["threading"],
                   max_steps=1) as agent:
        agent.run("Spin.")
    (span,) = _by_name(exporter.get_finished_spans())["execute_code"]
    assert span.attributes["agentdeck.sandbox.state_lost"] is True
    assert span.attributes["agentdeck.sandbox.untrusted"] is False



def test_an_answer_checks_second_attempt_is_an_event_of_the_run(traced, tmp_path):
    """The embedded model's second, independent attempt (agents/loop/second_attempt.py) shows in the trace."""
    exporter, provider = traced
    telemetry.instrument(tracer_provider=provider)
    model = ReplayModel([code("final_answer(17 * 23)"), code("final_answer(391)")], prompt_style="tiny")
    with CodeAgent(tools=[], model=model, workdir=tmp_path, verbosity=0, answer_agreement=True) as agent:
        # (A question whose answer the app does not work out itself: for one it does, no second attempt is made.)
        assert agent.run("What is the product of 17 and 23?") == 391
    found = [e for s in exporter.get_finished_spans() for e in s.events if e.name == "second_attempt"]
    assert len(found) == 1
    assert found[0].attributes["agentdeck.second_attempt.agrees"] is True
    assert found[0].attributes["agentdeck.second_attempt.model_calls"] == 1
