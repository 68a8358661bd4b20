"""One mapping from memory steps to events (agents/step_events/): a run's stream, saved and replayed, gives
the same events, for the kinds of steps the app's round trip (tests/ui/test_replay_round_trip.py) does not make:
tool-calling steps (JSON and native calls, failures, a rejection), tool calls from code between printed lines,
a compacted memory, the best guess after the last step, a stopped run and a failed one."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from agents import events as ev
from agents import tool
from agents.decisions import ApprovalPolicy, Decision, ScriptedDecider
from agents.memory.serialize import dumps_memory, loads_memory
from agents.models.replay import ReplayModel
from agents.step_events import STREAMING_ONLY, replay, replayable
from tests.agents.conftest import call, code
from tests.memory.conftest import SummaryAwareReplay

SECRET = b"step-events-secret-0123456789"


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: What to look up.
    """
    return f"value of {key}"


@tool
def broken(key: str) -> str:
    """Always fails.

    Args:
        key: Anything.
    """
    raise ValueError(f"no {key} here")


@tool(requires_approval=True)
def send(to: str) -> str:
    """Send something.

    Args:
        to: The recipient.
    """
    return f"sent to {to}"


def comparable(event: ev.Event) -> tuple[str, dict[str, Any]]:
    fields = {f.name: getattr(event, f.name) for f in dataclasses.fields(event)}
    fields.pop("timestamp")
    return type(event).__name__, fields


def replayed(agent: Any, workdir: Path) -> list[ev.Event]:
    """The events of the agent's memory after a save and a load."""
    memory = loads_memory(dumps_memory(agent.memory, SECRET), SECRET)
    return [event for _, events in replay(memory.steps, workdir) for event in events]


def assert_same(live: list[ev.Event], again: list[ev.Event]) -> None:
    assert not any(isinstance(e, STREAMING_ONLY) for e in again)
    assert [comparable(e) for e in again] == [comparable(e) for e in replayable(live)]


def test_tool_calling_steps_replay_as_they_streamed(make_tool_agent, tmp_path: Path) -> None:
    replies = [
        call("lookup", key="a"),
        {"content": "Calling natively.", "tool_calls": [{"name": "lookup", "arguments": {"key": "b"}, "id": "n1"}]},
        call("broken", key="c"),
        "Action:\n" + '[{"name": "lookup", "arguments": {"key": "d"}}, {"name": "send", "arguments": {"to": "eve"}}]',
        "I have no tool call for you.",
        call("final_answer", answer="done"),
    ]
    agent, _ = make_tool_agent(replies, tools=[lookup, broken, send], max_parallel_calls=1,
                               approval_policy=ApprovalPolicy.from_mode("approve_tools"),
                               decider=ScriptedDecider([Decision.reject("not eve")]))
    live = list(agent.run("Look things up", stream=True))
    assert live[-1].state == "success"
    results = [e for e in live if isinstance(e, ev.ToolCallResult)]
    assert [r.is_error for r in results] == [False, False, True, False, False, False]
    assert [r.rejected for r in results] == [False, False, False, False, True, False]  # a decision, not a failure
    assert results[4].output == "not eve"  # the person's reason
    told = "\n".join(str(m.get("content")) for m in agent.memory.messages)
    assert "rejected the call to send: not eve" in told  # the model is told why
    assert {e.error_type for e in live if isinstance(e, ev.StepError)} == {"ParsingError"}
    assert_same(live, replayed(agent, tmp_path))
    # The native call's reply is the model's text; the prompt still shows the call.
    native = list(agent.memory.action_steps())[1]
    assert native.model_output == "Calling natively." and "Calling tools:" in native.messages[0]["content"]


def test_tool_calls_from_code_replay_between_the_lines_printed(make_code_agent, tmp_path: Path) -> None:
    source = "print('first')\nprint(lookup('a'))\nprint('between')\nprint(lookup('b'))\nprint('last')"
    agent, _ = make_code_agent([code(source), code("final_answer('ok')")], tools=[lookup], workdir=tmp_path)
    live = list(agent.run("Look two things up", stream=True))
    order = [type(e).__name__ for e in replayable(live) if isinstance(e, (ev.ExecutionLog, ev.ToolCallProposed))]
    assert order.count("ToolCallProposed") == 2 and "ExecutionLog" in order
    assert_same(live, replayed(agent, tmp_path))


@tool
def fetch(n: int) -> str:
    """Fetch a record.

    Args:
        n: The record number.
    """
    return f"RECORD-{n} " + "lorem ipsum dolor sit amet " * 50


def test_a_compacted_memory_replays_its_summaries_where_they_were_made(make_tool_agent, tmp_path: Path) -> None:
    replies = ["PLAN: 1. fetch records 2. answer<end_plan>", *[call("fetch", n=i) for i in range(1, 8)],
               call("final_answer", answer="done")]
    agent, _ = make_tool_agent(SummaryAwareReplay(replies), tools=[fetch], planning_interval=4, max_steps=30,
                               context_budget=1800)
    live = list(agent.run("Collect the records.", stream=True))
    assert sum(isinstance(e, ev.MemoryCompacted) for e in live) >= 1
    assert_same(live, replayed(agent, tmp_path))


def test_a_compaction_while_asking_for_the_best_guess_replays_inside_that_step(make_tool_agent, tmp_path) -> None:
    replies = [call("fetch", n=i) for i in range(1, 4)] + ["My best guess."]
    agent, _ = make_tool_agent(SummaryAwareReplay(replies), tools=[fetch], max_steps=3, context_budget=900)
    live = list(agent.run("Collect the records.", stream=True))
    guess = next(i for i, e in enumerate(live) if isinstance(e, ev.StepStarted) and e.step_type == "final")
    assert live[-1].state == "max_steps" and any(isinstance(e, ev.MemoryCompacted) for e in live[guess:])
    assert_same(live, replayed(agent, tmp_path))


def test_the_best_guess_after_the_last_step_replays(make_code_agent, tmp_path: Path) -> None:
    agent, _ = make_code_agent([code("print('one')"), code("print('two')"), "My best guess is 3."], max_steps=2,
                               workdir=tmp_path)
    live = list(agent.run("Count", stream=True))
    assert live[-1].state == "max_steps" and any(isinstance(e, ev.StepStarted) and e.step_type == "final" for e in live)
    assert_same(live, replayed(agent, tmp_path))


def test_a_stopped_run_and_a_failed_one_replay_their_end(make_tool_agent, tmp_path: Path) -> None:
    holder: dict[str, Any] = {}

    @tool
    def stop_here(reason: str) -> str:
        """Stops the run.

        Args:
            reason: Why.
        """
        holder["agent"].interrupt()
        return "stopping"

    agent, _ = make_tool_agent(ReplayModel([call("stop_here", reason="enough")]), tools=[stop_here])
    holder["agent"] = agent
    live = list(agent.run("Stop", stream=True))
    live += list(agent.run("Go on", stream=True, reset=False))  # the script has no reply left: the run fails
    assert [e.state for e in live if isinstance(e, ev.RunFinished)] == ["interrupted", "error"]
    again = replayed(agent, tmp_path)
    assert_same(live, again)
    assert "ReplayExhaustedError" in (again[-1].error or "")


def test_a_call_rejected_before_records_kept_rejected_reopens_as_rejected() -> None:
    """Chats saved before `rejected` was recorded kept a rejection as an error whose output began "Rejected by
    the user: ": reopened, the call is the person's rejection with their reason (issue 19), other errors stay."""
    from agents.step_events import ToolCallRecord

    old = {"call_id": "c1", "name": "send", "arguments": {"to": "eve"}, "output": "Rejected by the user: not eve",
           "is_error": True, "finished": True}
    record = ToolCallRecord.from_dict(old)
    assert record is not None and (record.rejected, record.is_error, record.output) == (True, False, "not eve")
    failed = ToolCallRecord.from_dict({**old, "output": "no c here"})
    assert failed is not None and (failed.rejected, failed.is_error) == (False, True)
    again = ToolCallRecord.from_dict(record.as_dict())
    assert again is not None and (again.rejected, again.is_error, again.output) == (True, False, "not eve")


def test_a_code_steps_time_is_its_model_call_and_its_code_not_the_wait_around_them() -> None:
    """Issue 31: a step whose code ran in milliseconds showed ~8 s in "Approve each code step" mode: its wall time
    held the sandbox's cold start (and, where the run's thread waits, the person's decision, which shows its own
    time). The step's time is its model call plus its code's run; a step with no code run keeps its wall time."""
    from agents.memory.steps import ActionStep, Timing
    from agents.step_events.frames import step_finished

    fields = {"run_id": "r", "step": 1, "parent_id": None}
    ran = ActionStep(step_number=1, code="print('hi')", model_duration_s=0.5, execution_duration_s=0.02,
                     timing=Timing(start_time=100.0, end_time=109.2))
    assert abs(step_finished(ran, fields).duration_s - 0.52) < 1e-9
    no_code = ActionStep(step_number=1, model_duration_s=0.5, timing=Timing(start_time=100.0, end_time=101.5))
    assert step_finished(no_code, fields).duration_s == 1.5
