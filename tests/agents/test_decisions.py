"""Human in the loop at the agent level: every pause kind with approve, edit and reject."""
from __future__ import annotations

import threading

import pytest

from agents import events as ev
from agents import tool
from agents.decisions import ApprovalPolicy, Decision, ScriptedDecider, TerminalDecider
from agents.errors import ConfigurationError, ToolError
from agents.tooling.ask_user import AskUserTool
from tests.agents.conftest import call, code


@tool(requires_approval=True)
def send_email(to: str, body: str) -> str:
    """Send an email.

    Args:
        to: Recipient address.
        body: Message text.
    """
    SENT.append((to, body))
    return f"sent to {to}"


SENT: list[tuple[str, str]] = []


@pytest.fixture(autouse=True)
def _clear_outbox():
    SENT.clear()


# -- plan review ---------------------------------------------------------------------------------
def test_edited_plan_replaces_the_plan_and_reaches_the_model(make_tool_agent):
    decider = ScriptedDecider([Decision.edit("1. Use the EDITED approach")])
    agent, model = make_tool_agent(["1. original plan<end_plan>", call("final_answer", answer="ok")],
                                   planning_interval=5, approval_policy="review_plans", decider=decider)
    events = list(agent.run("t", stream=True))
    assert decider.requests[0].kind.value == "plan" and decider.requests[0].payload["plan"] == "1. original plan"
    prompt = "\n".join(m["content"] for m in model.calls[1])
    assert "EDITED approach" in prompt and "original plan" not in prompt
    plan_step = agent.memory.latest_plan()
    assert plan_step.plan == "1. Use the EDITED approach" and plan_step.edited_by_user
    assert [(d["kind"], d["outcome"], d["edited"]) for d in plan_step.decisions] == [
        ("plan", "edit", "1. Use the EDITED approach")]
    kinds = [e.kind for e in events]
    assert kinds.index("plan_proposed") < kinds.index("decision_requested") < kinds.index("decision_made")


def test_approved_and_rejected_plans(make_tool_agent):
    agent, model = make_tool_agent(["plan A<end_plan>", call("final_answer", answer=1)], planning_interval=5,
                                   approval_policy="review_plans", decider=ScriptedDecider([Decision.approve()]))
    agent.run("t")
    assert "plan A" in model.calls[1][-2]["content"]
    agent, model = make_tool_agent(["plan B<end_plan>", call("final_answer", answer=1)], planning_interval=5,
                                   approval_policy="review_plans",
                                   decider=ScriptedDecider([Decision.reject("too risky")]))
    agent.run("t")
    assert "too risky" in model.calls[1][-2]["content"]


# -- code approval -------------------------------------------------------------------------------
def test_code_approve_edit_reject(make_code_agent):
    decider = ScriptedDecider([Decision.approve(), Decision.edit("result = 'edited'\nprint(result)"),
                               Decision.reject("do not delete files"), Decision.approve()])
    agent, model = make_code_agent([code("print('first')"), code("print('original')"),
                                    code("import os\nos.remove('x')"), code("final_answer(result)")],
                                   approval_policy="approve_code", decider=decider)
    assert agent.run("t") == "edited"
    steps = list(agent.memory.action_steps())
    assert steps[0].logs == "first\n"
    assert steps[1].code.startswith("result = 'edited'") and steps[1].logs == "edited\n"
    assert "do not delete files" in model.calls[3][-1]["content"]
    assert steps[2].logs == ""
    assert [[d["outcome"] for d in s.decisions] for s in steps] == [["approve"], ["edit"], ["reject"], ["approve"]]
    assert steps[2].decisions[0]["detail"] == "do not delete files"


# -- tool-call approval --------------------------------------------------------------------------
def test_flagged_tool_call_reject_reason_reaches_model(make_tool_agent):
    decider = ScriptedDecider([Decision.reject("wrong recipient"), Decision.edit({"to": "bob@x", "body": "hi"})])
    agent, model = make_tool_agent([call("send_email", to="eve@x", body="hi"),
                                    call("send_email", to="eve@x", body="hi"),
                                    call("final_answer", answer="done")],
                                   tools=[send_email], approval_policy="approve_tools", decider=decider)
    assert agent.run("t") == "done"
    assert "wrong recipient" in model.calls[1][-1]["content"]
    assert SENT == [("bob@x", "hi")]
    assert [r.payload["tool_name"] for r in decider.requests] == ["send_email", "send_email"]


def test_tool_called_from_code_is_paused(make_code_agent):
    decider = ScriptedDecider([Decision.reject("not now"), Decision.edit({"to": "ok@x", "body": "edited"})])
    agent, model = make_code_agent([
        code("try:\n    send_email('a@x', 'hello')\nexcept Exception as e:\n    print('failed:', e)"),
        code("r = send_email(to='a@x', body='hello')\nfinal_answer(r)"),
    ], tools=[send_email], approval_policy="approve_tools", decider=decider)
    assert agent.run("t") == "sent to ok@x"
    assert "not now" in model.calls[1][-1]["content"]
    assert SENT == [("ok@x", "edited")]
    # A call with positional arguments is shown to the person with the inputs' names.
    assert decider.requests[0].payload["arguments"] == {"to": "a@x", "body": "hello"}


def test_unflagged_tools_run_without_pause_under_approve_tools(make_tool_agent):
    @tool
    def harmless() -> str:
        """Do nothing harmful."""
        return "fine"

    decider = ScriptedDecider([])
    agent, _ = make_tool_agent([call("harmless"), call("final_answer", answer=1)], tools=[harmless],
                               approval_policy="approve_tools", decider=decider)
    assert agent.run("t") == 1 and decider.requests == []


# -- questions -----------------------------------------------------------------------------------
def test_ask_user_answer_becomes_observation(make_code_agent):
    decider = ScriptedDecider([Decision.reply("blue")])
    agent, model = make_code_agent([code("colour = ask_user('Which colour?')\nprint(colour)"),
                                    code("final_answer(colour)")], tools=[AskUserTool()], decider=decider)
    assert agent.run("t") == "blue"
    assert decider.requests[0].payload == {"question": "Which colour?"}
    assert "blue" in model.calls[1][-1]["content"]


def test_ask_user_outside_a_run_gets_no_stale_answer(make_tool_agent):
    """After a run, nothing of it lingers on the thread: ask_user called outside a run refuses instead of
    asking the finished run's decider (which would hand back a stale answer)."""
    decider = ScriptedDecider([Decision.reply("blue"), Decision.reply("STALE")])
    ask_user = AskUserTool()
    agent, _ = make_tool_agent([call("ask_user", question="Which colour?"), call("final_answer", answer="done")],
                               tools=[ask_user], decider=decider)
    assert agent.run("t") == "done" and len(decider.requests) == 1  # the run asked once, on this thread
    with pytest.raises(ToolError, match="only be used inside an agent run"):
        ask_user("Which colour now?")
    assert len(decider.requests) == 1  # the finished run's decider was not asked again


# -- answering from another thread, time limits, validation ---------------------------------------
def test_external_decision_from_another_thread(make_tool_agent):
    agent, _ = make_tool_agent([call("send_email", to="a@x", body="b"), call("final_answer", answer="sent")],
                               tools=[send_email], approval_policy="approve_tools")
    answers = []
    for event in agent.run("t", stream=True):
        if isinstance(event, ev.DecisionRequested):
            assert [r.id for r in agent.pending_decisions()] == [event.request_id]
            threading.Timer(0.1, agent.resolve_decision, args=(event.request_id, Decision.approve())).start()
        answers.append(event)
    assert answers[-1].output == "sent" and SENT == [("a@x", "b")]


def test_time_limit_applies_default_outcome(make_tool_agent):
    policy = ApprovalPolicy.from_mode("approve_tools", timeout_s=0.2)
    agent, model = make_tool_agent([call("send_email", to="a@x", body="b"), call("final_answer", answer="x")],
                                   tools=[send_email], approval_policy=policy)
    assert agent.run("t") == "x"
    assert SENT == [] and "No decision came in time" in model.calls[1][-1]["content"]


def test_wrong_decision_shapes_are_refused():
    with pytest.raises(ConfigurationError, match="approval mode"):
        ApprovalPolicy.from_mode("sometimes")
    from agents.decisions import DecisionKind, DecisionRequest
    request = DecisionRequest(id="r", kind=DecisionKind.TOOL_CALL, payload={})
    with pytest.raises(ConfigurationError, match="must be a dict"):
        Decision.edit("not a dict").validate_for(request)


def test_terminal_decider_prompts():
    answers = iter(["e", "x = 2", "."])
    printed = []
    decider = TerminalDecider(input_function=lambda prompt: next(answers), output=printed.append)
    from agents.decisions import DecisionKind, DecisionRequest
    decision = decider.decide(DecisionRequest(id="r", kind=DecisionKind.CODE, payload={"code": "x = 1"}), None)
    assert decision.edited == "x = 2" and any("x = 1" in p for p in printed)
