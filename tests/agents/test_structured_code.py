"""Structured code steps: the CodeAgent asks for {"thought", "code"} JSON and runs its code like fenced code."""
from __future__ import annotations

import json

import pytest

from agents import ReplayModel
from agents.events import CodeProposed, StepError
from agents.loop.structured_code import CODE_STEP_FORMAT, StructuredReplyError, parse_code_step


def test_the_reply_object_is_asked_for_and_its_code_runs(make_code_agent):
    agent, model = make_code_agent(['{"thought": "Add them.", "code": "x = 2 + 3\\nfinal_answer(x)"}'],
                                   use_structured_outputs_internally=True)
    events = list(agent.run("Add two and three.", stream=True))
    assert [e.code for e in events if isinstance(e, CodeProposed)] == ["x = 2 + 3\nfinal_answer(x)"]
    assert events[-1].output == 5
    assert model.call_options[0]["response_format"] == CODE_STEP_FORMAT
    assert "response_prefix" not in model.call_options[0] and agent.stop_sequences == []
    system = model.calls[0][0]["content"]
    assert '"thought"' in system and '"code"' in system and "```python" not in system
    step = agent.memory.steps[-2]
    assert step.code == "x = 2 + 3\nfinal_answer(x)" and step.model_output.startswith('{"thought"')


def test_a_malformed_reply_gets_a_clear_error_and_the_run_goes_on(make_code_agent):
    agent, model = make_code_agent(['{"thought": "oops", "code": print(1)}',
                                    "Thought: I forgot.\n```python\nprint(1)\n```",
                                    '{"thought": "again", "code": "final_answer(42)"}'],
                                   use_structured_outputs_internally=True)
    events = list(agent.run("The answer?", stream=True))
    errors = [e for e in events if isinstance(e, StepError)]
    assert [e.error_type for e in errors] == ["ParsingError", "ParsingError"]
    assert "not valid JSON" in model.calls[1][-1]["content"] and "one JSON object" in model.calls[1][-1]["content"]
    assert "no JSON object" in model.calls[2][-1]["content"]
    assert events[-1].output == 42
    assert [s.model_output for s in agent.memory.action_steps()][0] == '{"thought": "oops", "code": print(1)}'  # kept


def test_a_model_without_structured_output_is_asked_by_the_prompt_alone(make_code_agent):
    agent, model = make_code_agent(ReplayModel(['{"thought": "t", "code": "final_answer(1)"}'],
                                               supports_structured_output=False),
                                   use_structured_outputs_internally=True)
    assert agent.run("One?") == 1
    assert "response_format" not in model.call_options[0]


def test_tiny_prompt_examples_are_written_as_objects(make_code_agent):
    model = ReplayModel(['{"thought": "t", "code": "final_answer(12)"}'])
    model.prompt_style = "tiny"
    agent, _ = make_code_agent(model, use_structured_outputs_internally=True)
    assert agent.run("What is 5 + 7?") == 12
    replies = [m["content"] for m in model.calls[0] if m["role"] == "assistant"]
    assert replies and all(json.loads(r)["code"].startswith("final_answer(") for r in replies)


@pytest.mark.parametrize("text,code", [
    ('{"thought": "a", "code": "print(1)"}', "print(1)"),
    ('```json\n{"thought": "a", "code": "print(2)"}\n```', "print(2)"),
    ('Sure: {"thought": "a", "code": "x = 1\nprint(x)"} done', "x = 1\nprint(x)"),  # a raw newline inside
    ('{"code": "```python\\nprint(3)\\n```"}', "print(3)"),
])
def test_parse_code_step_accepts(text, code):
    assert parse_code_step(text).code == code


@pytest.mark.parametrize("text,message", [
    ("no object here", "no JSON object"), ('{"thought": "a"}', 'no "code" string'),
    ('{"thought": "a", "code": "  "}', "empty"), ('{"thought": 3, "code": "x"}', "must be a string"),
    ('{"code": "x",}', "not valid JSON"),
])
def test_parse_code_step_refuses(text, message):
    with pytest.raises(StructuredReplyError, match=message):
        parse_code_step(text)


def test_a_structured_step_pauses_for_approval_and_an_edit_runs_instead(make_code_agent):
    """Approvals see a structured step's code as they see fenced code: paused, edited, and the edit is what runs
    and what memory keeps as the step's code."""
    from agents.decisions import Decision, ScriptedDecider

    agent, model = make_code_agent(['{"thought": "Delete it.", "code": "print(\'risky\')"}',
                                    '{"thought": "Done.", "code": "final_answer(\'done\')"}'],
                                   use_structured_outputs_internally=True, approval_policy="approve_code",
                                   decider=ScriptedDecider([Decision.edit("print('safer code')"),
                                                            Decision.approve()]))
    result = agent.run("Do it.", return_result=True)
    assert result.output == "done"
    first = next(iter(agent.memory.action_steps()))
    assert first.code == "print('safer code')" and "safer code" in first.logs and "risky" not in first.logs
    assert "safer code" in str(model.calls[1])  # the model is told what ran
