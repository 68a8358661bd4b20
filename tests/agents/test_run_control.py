"""Planning, final-answer checks, max steps, interrupt, step callbacks."""
from __future__ import annotations

import threading
import time

import pytest

from agents import RunState
from agents import events as ev
from agents.memory import ActionStep, PlanningStep
from tests.agents.conftest import call, code


def test_planning_at_step_one_and_every_interval(make_tool_agent):
    replies = [
        "1. look\n2. answer\n<end_plan>",      # plan at step 1
        call("unknown_tool"),
        call("unknown_tool"),
        "Updated: 1. answer now<end_plan>",     # plan update at step 3
        call("final_answer", answer="done"),
    ]
    agent, model = make_tool_agent(replies, planning_interval=2, max_steps=5)
    result = agent.run("task", return_result=True)
    assert result.output == "done"
    plans = [s for s in agent.memory.steps if isinstance(s, PlanningStep)]
    assert [p.plan for p in plans] == ["1. look\n2. answer", "Updated: 1. answer now"]
    assert [p.is_update for p in plans] == [False, True]
    # The initial plan is asked with the planning template; the update sees the history.
    assert "Facts survey" in model.calls[0][0]["content"]
    assert any("Unknown tool" in m["content"] for m in model.calls[3] if isinstance(m["content"], str))
    # The plan is in the prompt of the next action step.
    assert any("1. look" in m["content"] for m in model.calls[1])


def test_plan_events(make_tool_agent):
    agent, _ = make_tool_agent(["the plan<end_plan>", call("final_answer", answer=1)], planning_interval=5)
    events = list(agent.run("t", stream=True))
    plan_events = [e for e in events if isinstance(e, ev.PlanProposed)]
    assert len(plan_events) == 1 and plan_events[0].plan == "the plan" and plan_events[0].step == 1
    assert [e.step_type for e in events if isinstance(e, ev.StepStarted)] == ["planning", "action"]


def test_failing_final_answer_check_is_fed_back(make_tool_agent):
    def must_be_positive(answer, memory):
        return answer > 0

    agent, model = make_tool_agent([call("final_answer", answer=-1), call("final_answer", answer=5)],
                                   final_answer_checks=[must_be_positive])
    assert agent.run("t") == 5
    feedback = model.calls[1][-1]["content"]
    assert "not accepted" in feedback and "must_be_positive" in feedback


def test_check_that_raises_gives_its_message(make_tool_agent):
    def needs_units(answer, memory):
        if "kg" not in str(answer):
            raise ValueError("the answer must include units (kg)")
        return True

    agent, model = make_tool_agent([call("final_answer", answer="5"), call("final_answer", answer="5 kg")],
                                   final_answer_checks=[needs_units])
    assert agent.run("t") == "5 kg"
    assert "must include units" in model.calls[1][-1]["content"]


def test_max_steps_asks_for_best_answer(make_tool_agent):
    agent, model = make_tool_agent([call("nothing"), call("nothing"), "My best guess is 7."], max_steps=2)
    result = agent.run("t", return_result=True)
    assert result.state is RunState.MAX_STEPS and result.max_steps_reached
    assert result.output == "My best guess is 7."
    assert len(model.calls) == 3 and "ran out of steps" in model.calls[2][0]["content"]


def test_interrupt_from_another_thread_stops_running_code(make_code_agent):
    agent, model = make_code_agent([code("import time\nprint('sleeping')\ntime.sleep(30)"), code("final_answer(1)")],
                                   executor_timeout_s=60)
    started = time.monotonic()
    seen = []
    for event in agent.run("t", stream=True):
        seen.append(event)
        if isinstance(event, ev.ExecutionLog):  # the code runs: stop it from another thread
            threading.Thread(target=agent.interrupt).start()
    elapsed = time.monotonic() - started
    assert seen[-1].kind == "run_finished" and seen[-1].state == "interrupted"
    assert elapsed < 15, f"interrupt took {elapsed:.1f}s"
    assert len(model.calls) == 1
    # The agent is still usable afterwards.
    agent.model = type(model)([code("final_answer('alive')")])
    assert agent.run("again") == "alive"


def test_a_stop_that_cost_the_variables_says_so(make_code_agent, monkeypatch):
    """Code that does not stop in time is ended by restarting the worker: the stopped step tells the person and
    the model that the variables are gone (it used to say only that it was stopped). The code swallows the one
    interrupt its run gets, wherever it lands, then spins."""
    from agents.executor import run_watch

    monkeypatch.setattr(run_watch, "GRACE_S", 0.1)
    stubborn = ("try:\n    print('going', flush=True)\n    while True:\n        pass\n"
                "except KeyboardInterrupt:\n    pass\nwhile True:\n    pass")
    agent, _ = make_code_agent([code("x = 41"), code(stubborn)], executor_timeout_s=60)
    errors = []
    for event in agent.run("t", stream=True):
        if isinstance(event, ev.ExecutionLog) and "going" in event.text:
            agent.interrupt()
        if isinstance(event, ev.StepError):
            errors.append(event)
    stopped = agent.memory.steps[-1]
    assert isinstance(stopped, ActionStep) and "stopped by the user" in stopped.error
    assert "variables" in stopped.error and "lost" in stopped.error
    assert len(errors) == 1 and errors[0].error_type == "InterruptedError" and "lost" in errors[0].message


def test_interrupt_during_streaming_model(make_tool_agent):
    agent, _ = make_tool_agent([call("x") * 50, call("final_answer", answer=1)])
    seen = []
    for event in agent.run("t", stream=True):
        seen.append(event)
        if isinstance(event, ev.ModelTextDelta):
            agent.interrupt()
    assert seen[-1].kind == "run_finished" and seen[-1].state == "interrupted"


def test_step_callbacks_by_type(make_tool_agent):
    calls = {"action": [], "planning": [], "all": []}
    agent, _ = make_tool_agent(
        ["plan<end_plan>", call("final_answer", answer=1)], planning_interval=3,
        step_callbacks={ActionStep: lambda s, a: calls["action"].append(s.step_number),
                         "planning": [lambda s, a: calls["planning"].append(s.plan)]},
    )
    agent.step_callbacks.add(lambda s, a: calls["all"].append(s.step_type))
    agent.run("t")
    assert calls == {"action": [1], "planning": ["plan"], "all": ["planning", "action"]}


@pytest.mark.slow  # waits for a sandbox start (about 5 s)
def test_interrupt_while_the_sandbox_is_starting_is_not_lost(make_code_agent):
    """A Stop that arrives before the worker is up must still stop the code (it used to be dropped)."""
    agent, model = make_code_agent([code("import time\ntime.sleep(30)"), code("final_answer(1)")],
                                   executor_timeout_s=60)
    assert agent._sandbox is None  # the first step starts the worker
    started = time.monotonic()
    seen = []
    for event in agent.run("t", stream=True):
        seen.append(event)
        if isinstance(event, ev.CodeProposed):
            agent.interrupt()  # the sandbox does not exist yet or is still starting
    elapsed = time.monotonic() - started
    assert seen[-1].state == "interrupted"
    assert elapsed < 15, f"the stop took {elapsed:.1f}s"


def test_logs_stream_while_code_runs(make_code_agent):
    """Each line is printed only once the test has seen the one before it (the code waits for a file the test
    writes), so the output can only arrive whole if it streams while the code runs."""
    wait_for_the_test = ("    for _ in range(3000):\n        try:\n            open(f'seen{i}').close()\n"
                         "            break\n        except FileNotFoundError:\n            time.sleep(0.01)\n")
    agent, _ = make_code_agent([code("import time\nfor i in range(3):\n    print('tick', i)\n" + wait_for_the_test),
                                code("final_answer(1)")])
    events, text = [], ""
    for event in agent.run("t", stream=True):
        events.append(event)
        if isinstance(event, ev.ExecutionLog):
            text += event.text
            for i in range(3):
                if f"tick {i}\n" in text:
                    (agent.workdir / f"seen{i}").touch()
    logs = [e for e in events if isinstance(e, ev.ExecutionLog)]
    assert len(logs) == 3, "long-running code should stream its output in pieces"
    assert "".join(e.text for e in logs) == "tick 0\ntick 1\ntick 2\n"
    assert events[-1].state == "success"


@pytest.mark.slow
def test_output_before_a_long_computation_is_shown_while_it_runs(make_code_agent):
    """A line printed just before slow work, and a partial line, reach the app while the code still runs
    (they used to wait for the end of the step)."""
    agent, _ = make_code_agent([code("import time\nprint('loading the data')\ntime.sleep(1.5)\n"
                                     "print('50%', end='')\ntime.sleep(1.5)"), code("final_answer(1)")])
    events = list(agent.run("t", stream=True))
    logs = [e for e in events if isinstance(e, ev.ExecutionLog)]
    step_end = next(e for e in events if isinstance(e, ev.StepFinished)).timestamp
    assert "".join(e.text for e in logs) == "loading the data\n50%"
    loading = next(e for e in logs if "loading" in e.text)
    percent = next(e for e in logs if "50%" in e.text)
    assert loading.timestamp < step_end - 2.5 and percent.timestamp < step_end - 1.0


def test_token_budget_stops_the_run_and_keeps_its_steps(make_code_agent) -> None:
    from agents.models.replay import ReplayModel

    replies = [{"content": code(f"x{i} = {i}"), "token_usage": {"input_tokens": 400, "output_tokens": 100}}
               for i in range(5)]
    agent, _ = make_code_agent(ReplayModel(replies), max_steps=5, max_tokens_per_run=1200)
    result = agent.run("count", return_result=True)
    assert result.state.value == "error" and "budget of 1,200" in result.error
    assert sum(1 for s in result.steps if s.step_type == "action") == 3  # 500, 1000, 1500 > 1200: stopped
    assert [s.step_type for s in agent.memory.steps].count("action") == 3  # nothing of the run was dropped
