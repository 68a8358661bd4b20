"""Pause mode: a decision request ends the run, recorded in memory and saved; `resume(decision)` in a fresh
agent (a new process's: the memory loaded from its signed file) goes on from exactly that point."""
from __future__ import annotations

import pytest

from agents import events as ev
from agents import tool
from agents.decisions import Decision
from agents.decisions.policy import ApprovalPolicy
from agents.errors import ConfigurationError, MemoryIntegrityError
from agents.loop.restore import rebuild_sandbox_state, restore_agent_memory
from agents.loop.result import RunState
from agents.memory.serialize import dumps_memory, loads_memory
from agents.models.replay import ReplayModel
from agents.tooling.ask_user import AskUserTool
from tests.agents.conftest import call, code

SECRET = b"s" * 32
SENT: list[str] = []


@tool(requires_approval=True)
def send_note(text: str) -> str:
    """Send a note.

    Args:
        text: The note.
    """
    SENT.append(text)
    return f"sent {text}"


@pytest.fixture(autouse=True)
def _clear():
    SENT.clear()


def _paused_code_agent(make_code_agent, tmp_path, replies, **kwargs):
    agent, _ = make_code_agent(replies, approval_policy=kwargs.pop("approval_policy", "approve_code"),
                               pause_on_decision=True, workdir=tmp_path / "ws", **kwargs)
    result = agent.run("task", return_result=True)
    assert result.state is RunState.PAUSED
    assert agent.memory.pending is not None
    return agent, dumps_memory(agent.memory, SECRET)


def _fresh(make_code_agent, tmp_path, saved, replies, **kwargs):
    """A new agent on the same workspace, its memory loaded from the signed file, its variables re-made."""
    agent, model = make_code_agent(ReplayModel(replies), pause_on_decision=True, workdir=tmp_path / "ws", **kwargs)
    restore_agent_memory(agent, loads_memory(saved, SECRET))
    rebuild_sandbox_state(agent.memory, agent)
    return agent, model


def test_a_code_decision_ends_the_run_and_a_fresh_agent_resumes_with_approve(make_code_agent, tmp_path):
    replies = [code("x = 20"), code("y = x + 1\nprint(y)"), code("final_answer(y * 2)")]
    agent, saved = _paused_code_agent(make_code_agent, tmp_path, replies[:1] + replies[1:])
    # the first step's code was asked about: nothing ran, the step is not in memory, the request is
    assert agent.memory.pending.kind == "code" and agent.memory.pending.payload["code"].endswith("x = 20")
    assert not list(agent.memory.action_steps())
    agent.close()
    fresh, model = _fresh(make_code_agent, tmp_path, saved, replies[1:], approval_policy="approve_code")
    result = fresh.resume(Decision.approve(), return_result=True)
    assert result.state is RunState.PAUSED  # the next step's code asks again
    assert len(model.calls) == 1  # the paused step was acted from its recorded reply, not asked again
    steps = list(fresh.memory.action_steps())
    assert steps[0].code.endswith("x = 20") and steps[0].decisions[0]["outcome"] == "approve"
    saved = dumps_memory(fresh.memory, SECRET)
    fresh.close()
    third, _ = _fresh(make_code_agent, tmp_path, saved, replies[2:], approval_policy="approve_code")
    assert third.resume(Decision.approve(), return_result=True).state is RunState.PAUSED
    assert "21" in list(third.memory.action_steps())[-1].logs  # x survived the restart (re-run recorded code)
    assert third.resume(Decision.approve()) == 42


def test_resume_with_an_edit_runs_the_edited_code(make_code_agent, tmp_path):
    agent, saved = _paused_code_agent(make_code_agent, tmp_path, [code("final_answer(1)")])
    agent.close()
    fresh, _ = _fresh(make_code_agent, tmp_path, saved, [], approval_policy="approve_code")
    assert fresh.resume(Decision.edit("final_answer(7)")) == 7
    step = list(fresh.memory.action_steps())[0]
    assert step.decisions[0]["outcome"] == "edit" and step.code == "final_answer(7)"


def test_resume_with_a_reject_tells_the_model_the_reason(make_code_agent, tmp_path):
    agent, saved = _paused_code_agent(make_code_agent, tmp_path, [code("final_answer(1)")])
    agent.close()
    fresh, model = _fresh(make_code_agent, tmp_path, saved, [code("final_answer(2)")], approval_policy="autonomous")
    assert fresh.resume(Decision.reject("not that one")) == 2
    assert "not that one" in model.calls[0][-1]["content"]


def test_an_answer_reaches_ask_user_in_a_new_process_and_the_step_reruns(make_code_agent, tmp_path):
    source = "print('before')\ncolour = ask_user(question='Which colour?')\nfinal_answer(colour)"
    agent, saved = _paused_code_agent(make_code_agent, tmp_path, [code(source)], approval_policy="autonomous",
                                      tools=[AskUserTool()])
    pending = agent.memory.pending
    assert pending.kind == "question" and pending.payload["question"] == "Which colour?" and pending.in_code
    agent.close()
    fresh, _ = _fresh(make_code_agent, tmp_path, saved, [], approval_policy="autonomous", tools=[AskUserTool()])
    assert fresh.resume(Decision.reply("green")) == "green"
    step = list(fresh.memory.action_steps())[0]
    assert step.logs.count("before") == 1  # the code ran from its start once, in the new sandbox


def test_a_tool_call_from_code_is_granted_for_that_exact_call_only(make_code_agent, tmp_path):
    source = "send_note(text='hello')\nfinal_answer(send_note(text='again'))"
    agent, saved = _paused_code_agent(make_code_agent, tmp_path, [code(source)], approval_policy="approve_tools",
                                      tools=[send_note])
    assert SENT == [] and agent.memory.pending.payload["arguments"] == {"text": "hello"}
    agent.close()
    fresh, _ = _fresh(make_code_agent, tmp_path, saved, [], approval_policy="approve_tools", tools=[send_note])
    result = fresh.resume(Decision.approve(), return_result=True)
    # the approved call ran; the second, different call is a new request: the run ends there again
    assert SENT == ["hello"] and result.state is RunState.PAUSED
    assert fresh.memory.pending.payload["arguments"] == {"text": "again"}


def test_a_decision_made_again_in_a_resumed_step_keeps_the_time_it_was_made(make_code_agent, tmp_path):
    """Found by a review (issue 31): code approved, then a tool call in it asked for its own decision; when that
    was answered, the resumed step made the code decision again and stamped it "now", so the chat's time for the
    code decision included the whole wait for the tool-call decision."""
    policy = ApprovalPolicy(approve_code=True, tool_calls="flagged")
    source = "final_answer(send_note(text='hello'))"
    agent, saved = _paused_code_agent(make_code_agent, tmp_path, [code(source)], approval_policy=policy,
                                      tools=[send_note])
    assert agent.memory.pending.kind == "code"
    agent.close()
    fresh, _ = _fresh(make_code_agent, tmp_path, saved, [], approval_policy=policy, tools=[send_note])
    assert fresh.resume(Decision.approve(), return_result=True).state is RunState.PAUSED
    pending = fresh.memory.pending
    assert pending.kind == "tool_call" and SENT == []
    code_decided = [r["decided_at"] for r in pending.earlier if r["kind"] == "code"]
    assert len(code_decided) == 1
    saved = dumps_memory(fresh.memory, SECRET)
    fresh.close()
    later, _ = _fresh(make_code_agent, tmp_path, saved, [], approval_policy=policy, tools=[send_note])
    made: list[ev.DecisionMade] = []
    for event in later.resume(Decision.approve(), stream=True):
        if isinstance(event, ev.DecisionMade):
            made.append(event)
    assert SENT == ["hello"]
    code_made = [e for e in made if e.request_kind == "code"]
    assert len(code_made) == 1 and code_made[0].timestamp == code_decided[0]
    step = list(later.memory.action_steps())[0]
    assert [r["decided_at"] for r in step.decisions if r["kind"] == "code"] == code_decided


def test_a_tool_calling_agent_resumes_an_edited_call(make_tool_agent):
    agent, _ = make_tool_agent([call("send_note", text="draft"), call("final_answer", answer="done")],
                               tools=[send_note], approval_policy="approve_tools", pause_on_decision=True)
    assert agent.run("t", return_result=True).state is RunState.PAUSED and SENT == []
    saved = dumps_memory(agent.memory, SECRET)
    fresh, _ = make_tool_agent([call("final_answer", answer="done")], tools=[send_note],
                               approval_policy="approve_tools", pause_on_decision=True)
    restore_agent_memory(fresh, loads_memory(saved, SECRET))
    assert fresh.resume(Decision.edit({"text": "final"})) == "done"
    assert SENT == ["final"]


def test_nothing_to_resume_and_a_wrong_decision_are_refused(make_tool_agent):
    agent, _ = make_tool_agent([call("send_note", text="x")], tools=[send_note], approval_policy="approve_tools",
                               pause_on_decision=True)
    with pytest.raises(ConfigurationError, match="nothing to resume"):
        agent.resume(Decision.approve())
    agent.run("t")
    with pytest.raises(ConfigurationError, match="needs approve, edit or reject"):
        agent.resume(Decision.reply("yes"))
    assert agent.memory.pending is not None  # a refused decision leaves the request open


def test_a_tampered_pending_record_is_refused(make_tool_agent):
    agent, _ = make_tool_agent([call("send_note", text="x")], tools=[send_note], approval_policy="approve_tools",
                               pause_on_decision=True)
    agent.run("t")
    saved = dumps_memory(agent.memory, SECRET)
    with pytest.raises(MemoryIntegrityError):
        loads_memory(saved.replace('"text": "x"', '"text": "y"') if isinstance(saved, str)
                     else saved.replace(b'"text": "x"', b'"text": "y"').replace(b'"text":"x"', b'"text":"y"'),
                     SECRET)


def test_a_new_task_drops_the_pending_decision(make_tool_agent):
    agent, _ = make_tool_agent([call("send_note", text="x"), call("final_answer", answer=3)], tools=[send_note],
                               approval_policy="approve_tools", pause_on_decision=True)
    agent.run("t")
    assert agent.memory.pending is not None
    assert agent.run("other", reset=False) == 3 and agent.memory.pending is None


def test_a_blocked_run_keeps_its_request_in_memory_while_it_waits(make_tool_agent):
    """The app's live runs still wait in a thread; a chat saved meanwhile holds the request, so a new process
    resumes it after a restart, and the answer in this process clears it."""
    seen: list[object] = []

    def decide(request):
        seen.append(agent.memory.pending)
        return Decision.approve()

    from agents.decisions import ScriptedDecider
    agent, _ = make_tool_agent([call("send_note", text="n"), call("final_answer", answer="ok")], tools=[send_note],
                               approval_policy="approve_tools", decider=ScriptedDecider(decide))
    saved_while_waiting: list[str] = []
    original = agent.broker.decider.decide

    def deciding(request, timeout_s):
        saved_while_waiting.append(dumps_memory(agent.memory, SECRET))
        return original(request, timeout_s)

    agent.broker.decider.decide = deciding
    assert agent.run("t") == "ok" and SENT == ["n"]
    assert seen[0] is not None and seen[0].payload["arguments"] == {"text": "n"}
    assert agent.memory.pending is None  # answered: nothing waits any more
    fresh, _ = make_tool_agent([call("final_answer", answer="again")], tools=[send_note],
                               approval_policy="approve_tools")
    restore_agent_memory(fresh, loads_memory(saved_while_waiting[0], SECRET))
    assert fresh.resume(Decision.approve()) == "again" and SENT == ["n", "n"]


def _usage(input_tokens: int, output_tokens: int, content: str) -> dict:
    return {"content": content, "token_usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}}


def test_a_resumed_run_reports_the_whole_runs_tokens_and_time(make_code_agent, tmp_path):
    """A run paused twice and resumed in fresh agents reports what a run that never paused would: each paused
    step's reply keeps its tokens and model time, and the run's clock counts the time before each pause."""
    replies = [_usage(100, 10, code("x = 20")), _usage(200, 20, code("final_answer(x + 1)"))]
    agent, saved = _paused_code_agent(make_code_agent, tmp_path, replies)
    before = agent.memory.pending
    assert (before.reply_input_tokens, before.reply_output_tokens) == (100, 10)
    paused_s = next(s for s in agent.memory.steps if getattr(s, "run_id", None) == before.run_id).duration_s
    assert paused_s > 0
    agent.close()
    fresh, _ = _fresh(make_code_agent, tmp_path, saved, replies[1:], approval_policy="approve_code")
    assert fresh.resume(Decision.approve(), return_result=True).state is RunState.PAUSED
    saved = dumps_memory(fresh.memory, SECRET)
    fresh.close()
    third, _ = _fresh(make_code_agent, tmp_path, saved, [], approval_policy="approve_code")
    result = third.resume(Decision.approve(), return_result=True)
    assert result.output == 21
    assert (result.token_usage.input_tokens, result.token_usage.output_tokens) == (300, 30)
    assert [s.token_usage.total_tokens for s in third.memory.action_steps()] == [110, 220]
    assert result.duration_s > paused_s


def test_a_pending_record_with_bad_figures_is_refused():
    from agents.decisions.pending import PendingDecision

    good = {"request_id": "r", "kind": "code", "payload": {}, "run_id": "run", "step_number": 1}
    assert PendingDecision.from_dict(good).reply_input_tokens == 0  # a record saved before they were kept
    for bad in ({"reply_input_tokens": -1}, {"reply_output_tokens": "9"}, {"reply_model_s": float("nan")},
                {"reply_model_s": "1"}):
        with pytest.raises(ValueError, match="malformed"):
            PendingDecision.from_dict({**good, **bad})
