"""A person's edits are recorded truthfully: the memory holds what ran and says the person changed it, the model's
next prompt shows that (read from what the replay model received), and the records survive a save and load."""
from __future__ import annotations

import json

import pytest

from agents import events as ev
from agents import tool
from agents.decisions import Decision, DecisionRecord, ScriptedDecider
from agents.memory.serialize import load_memory, save_memory
from tests.agents.conftest import call, code

SENT: list[tuple[str, str]] = []


@tool(requires_approval=True)
def send_email(to: str, body: str) -> str:
    """Send an email.

    Args:
        to: Recipient address.
        body: Message text.
    """
    SENT.append((to, body))
    return f"sent to {to}"


@pytest.fixture(autouse=True)
def _clear_outbox():
    SENT.clear()


def _text(messages: list[dict]) -> str:
    return "\n".join(str(m["content"]) for m in messages)


def test_edited_code_the_next_prompt_says_what_ran_and_who_changed_it(make_code_agent):
    decider = ScriptedDecider([Decision.edit("total = 40 + 2\nprint('edited total', total)"), Decision.approve()])
    agent, model = make_code_agent([code("total = 1 + 1\nprint('original total', total)", "Add the numbers."),
                                    code("final_answer(total)")], approval_policy="approve_code", decider=decider)
    events = list(agent.run("Add the numbers", stream=True))
    assert events[-1].output == 42

    step = list(agent.memory.action_steps())[0]
    assert step.code == "total = 40 + 2\nprint('edited total', total)" and step.edited_by_user  # what ran
    assert "original total" in step.model_output and step.logs == "edited total 42\n"  # what the model wrote
    record = DecisionRecord.from_dict(step.decisions[0])
    assert (record.kind, record.outcome) == ("code", "edit")
    assert record.proposed == {"code": "total = 1 + 1\nprint('original total', total)"}
    assert record.edited == "total = 40 + 2\nprint('edited total', total)"

    # The second model call: the model's own reply, then a user message that says the person changed the
    # code and shows the code that ran before its output.
    reply, told = model.calls[1][-2], model.calls[1][-1]
    assert reply["role"] == "assistant" and "original total" in reply["content"]
    assert told["role"] == "user"
    assert "The user edited your code before it ran" in told["content"]
    assert told["content"].index("print('edited total', total)") < told["content"].index("edited total 42")
    assert "original total" not in told["content"]

    made = [e for e in events if isinstance(e, ev.DecisionMade)]
    assert made[0].outcome == "edit" and made[0].edited == "total = 40 + 2\nprint('edited total', total)"
    assert made[1].outcome == "approve" and made[1].edited is None
    assert not list(agent.memory.action_steps())[1].edited_by_user


def test_approved_code_adds_no_edit_note(make_code_agent):
    agent, model = make_code_agent([code("print('as written')"), code("final_answer(1)")],
                                   approval_policy="approve_code", decider=ScriptedDecider([Decision.approve()] * 2))
    agent.run("t")
    assert "edited" not in model.calls[1][-1]["content"] and not list(agent.memory.action_steps())[0].edited_by_user


def test_edited_tool_arguments_are_recorded_as_run_and_the_model_is_told(make_tool_agent):
    decider = ScriptedDecider([Decision.edit({"to": "bob@x", "body": "hi from Bob's friend"})])
    agent, model = make_tool_agent([call("send_email", to="eve@x", body="hi"), call("final_answer", answer="done")],
                                   tools=[send_email], approval_policy="approve_tools", decider=decider)
    assert agent.run("Email someone") == "done"
    assert SENT == [("bob@x", "hi from Bob's friend")]
    step = list(agent.memory.action_steps())[0]
    assert [c.arguments for c in step.tool_calls] == [{"to": "bob@x", "body": "hi from Bob's friend"}]  # what ran
    assert "eve@x" in step.model_output and step.edited_by_user  # what the model asked for
    record = DecisionRecord.from_dict(step.decisions[0])
    assert record.proposed["arguments"] == {"to": "eve@x", "body": "hi"}
    assert record.proposed["tool_name"] == "send_email"

    told = model.calls[1][-1]["content"]
    assert "The user changed the arguments of your call to send_email before it ran" in told
    assert json.dumps({"to": "bob@x", "body": "hi from Bob's friend"}) in told and "sent to bob@x" in told


def test_edited_call_from_code_is_told_to_the_model(make_code_agent):
    decider = ScriptedDecider([Decision.edit({"to": "ok@x", "body": "edited"})])
    agent, model = make_code_agent([code("print(send_email(to='a@x', body='hello'))"), code("final_answer('ok')")],
                                   tools=[send_email], approval_policy="approve_tools", decider=decider)
    assert agent.run("t") == "ok"
    step = list(agent.memory.action_steps())[0]
    assert step.edited_by_user and step.code == "print(send_email(to='a@x', body='hello'))"  # the code ran as written
    assert [c.arguments for c in step.tool_calls] == [{"to": "ok@x", "body": "edited"}]
    told = model.calls[1][-1]["content"]
    assert "changed the arguments of your call to send_email" in told and '"to": "ok@x"' in told
    assert "The user edited your code" not in told


def test_edited_plan_is_followed_and_the_model_is_told_it_is_the_persons(make_tool_agent):
    decider = ScriptedDecider([Decision.edit("1. Ask Bob first.")])
    agent, model = make_tool_agent(["1. Do it alone.<end_plan>", call("final_answer", answer="ok")],
                                   planning_interval=5, approval_policy="review_plans", decider=decider)
    agent.run("t")
    prompt = _text(model.calls[1])
    assert "1. Ask Bob first." in prompt and "Do it alone" not in prompt
    assert "The user edited your plan before you acted on it" in prompt
    plan = agent.memory.latest_plan()
    assert plan.edited_by_user and "Do it alone" in plan.model_output
    assert DecisionRecord.from_dict(plan.decisions[0]).proposed == {"plan": "1. Do it alone."}


def test_decision_records_survive_a_save_and_load(make_code_agent, tmp_path):
    decider = ScriptedDecider([Decision.edit("print('mine')"), Decision.reject("not that"), Decision.approve()])
    agent, _ = make_code_agent([code("print('yours')"), code("import shutil"), code("final_answer(2)")],
                               approval_policy="approve_code", decider=decider)
    agent.run("t")
    save_memory(agent.memory, tmp_path / "m.json", secret="s" * 32)
    loaded = load_memory(tmp_path / "m.json", secret="s" * 32)
    records = [[DecisionRecord.from_dict(d) for d in s.decisions] for s in loaded.action_steps()]
    assert [[(r.outcome, r.detail, r.edited) for r in rs] for rs in records] == [
        [("edit", "", "print('mine')")], [("reject", "not that", None)], [("approve", "", None)]]
    first = list(loaded.action_steps())[0]
    assert records[0][0].proposed == {"code": "print('yours')"} and first.edited_by_user
    assert first.messages == list(agent.memory.action_steps())[0].messages  # the prompt is kept as sent


@pytest.mark.parametrize("data", [None, "edit", {"kind": "code"}, {"kind": 1, "outcome": "edit"},
                                  {"kind": "code", "outcome": "edit", "proposed": "x"}])
def test_records_that_are_not_records_are_read_as_none_or_without_proposal(data):
    record = DecisionRecord.from_dict(data)
    assert record is None or record.proposed == {}


def test_the_markdown_export_says_what_the_person_edited(make_code_agent):
    from agents.memory.export import EDITED_NOTE, to_markdown

    decider = ScriptedDecider([Decision.edit("1. My plan."), Decision.edit("print('mine')"), Decision.approve()])
    agent, _ = make_code_agent(["1. Its plan.<end_plan>", code("print('its')"), code("final_answer(1)")],
                               planning_interval=5, approval_policy="all", decider=decider)
    agent.run("t")
    markdown = to_markdown(agent.memory)
    # What ran is shown marked as the person's; the agent's version only under the decision, labelled so.
    plan = markdown.split("### Plan")[1].split("### Step 1")[0]
    assert plan.startswith(f"\n\n{EDITED_NOTE}\n\n1. My plan.\n\n**✋ Decision: edit**")
    assert plan.index("The agent's plan:\n\n1. Its plan.") > plan.index("Decision: edit")
    step = markdown.split("### Step 1")[1].split("### Step 2")[0]
    assert step.index(EDITED_NOTE) < step.index("print('mine')") < step.index("**✋ Decision: edit**")
    assert step.index("The agent's code (it did not run):") < step.index("print('its')")
    assert EDITED_NOTE not in markdown.split("### Step 2")[1]
