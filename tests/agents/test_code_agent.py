"""CodeAgent through the real sandbox: the public API, observations, errors fed back, state between steps."""
from __future__ import annotations

import functools

import pytest

from agents import ReplayModel, RunState, tool
from agents import events as ev
from agents.memory import ActionStep
from tests.agents.conftest import code


def test_public_api_example(make_code_agent):
    agent, model = make_code_agent([
        "Thought: add them.\n```python\nx = 1 + 1\nprint(x)\n```",
        "Thought: done.\n```python\nfinal_answer(x * 21)\n```",
    ], tools=[], max_steps=10)
    assert agent.run("What is (1+1)*21?") == 42
    assert len(model.calls) == 2
    assert all(isinstance(m, dict) and "role" in m for m in model.calls[0])
    observation = model.calls[1][-1]["content"]
    assert observation.startswith("Observation:") and "2" in observation


def test_code_tags_and_last_expression_value(make_code_agent):
    agent, model = make_code_agent(["<code>\nvalue = 6 * 7\nvalue\n</code>", code("final_answer(value)")])
    assert agent.run("t") == 42
    assert "Last output from code snippet:\n42" in model.calls[1][-1]["content"]


def test_errors_become_observations_not_crashes(make_code_agent):
    agent, model = make_code_agent([
        "no code here at all",
        code("def broken(:\n    pass"),
        code("undefined_name + 1"),
        code("raise ValueError('custom problem')"),
        code("final_answer('recovered')"),
    ], max_steps=6)
    result = agent.run("t", return_result=True)
    assert result.state is RunState.SUCCESS and result.output == "recovered"
    observations = [call[-1]["content"] for call in model.calls[1:]]
    assert "no code block" in observations[0]
    assert "SyntaxError" in observations[1]
    assert "NameError" in observations[2] and "undefined_name" in observations[2]
    assert "custom problem" in observations[3]
    errors = [s.error for s in agent.memory.action_steps()]
    assert all(errors[:4]) and errors[4] is None


def test_tool_failure_is_fed_back(make_code_agent):
    @tool
    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: The key.
        """
        if key == "bad":
            raise RuntimeError("the lookup service is down")
        return f"value-of-{key}"

    agent, model = make_code_agent([
        code("print(lookup('bad'))"),
        code("print(lookup(key='good'))"),
        code("final_answer(lookup('good'))"),
    ], tools=[lookup])
    events = list(agent.run("t", stream=True))
    assert isinstance(events[-2], ev.FinalAnswer) and events[-2].value == "value-of-good"
    assert "the lookup service is down" in model.calls[1][-1]["content"]
    assert "value-of-good" in model.calls[2][-1]["content"]
    # Issue 31: the person is shown the failure once, in the call (a step error repeated the traceback)
    failed = [e for e in events if isinstance(e, ev.ToolCallResult) and e.is_error]
    assert len(failed) == 1 and "the lookup service is down" in failed[0].output
    assert not [e for e in events if isinstance(e, ev.StepError)]
    assert "the lookup service is down" in (list(agent.memory.action_steps())[0].error or "")


def test_a_caught_tool_failure_then_another_error_still_shows_the_error(make_code_agent):
    @tool
    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: The key.
        """
        raise RuntimeError("the lookup service is down")

    agent, _ = make_code_agent([
        code("try:\n    lookup('x')\nexcept Exception:\n    pass\n1 / 0"),
        code("final_answer('done')"),
    ], tools=[lookup])
    events = list(agent.run("t", stream=True))
    errors = [e for e in events if isinstance(e, ev.StepError)]
    assert len(errors) == 1 and "ZeroDivisionError" in errors[0].message


@pytest.mark.slow
def test_timeout_is_an_observation(make_code_agent):
    agent, model = make_code_agent([code("while True:\n    pass"), code("final_answer('after timeout')")],
                                   executor_timeout_s=1.5)
    assert agent.run("t") == "after timeout"
    assert "time" in model.calls[1][-1]["content"].lower()


def test_state_persists_and_follow_up_continues(make_code_agent):
    agent, model = make_code_agent([
        code("data = [1, 2, 3]\nfinal_answer(sum(data))"),
        code("data.append(4)\nfinal_answer(sum(data))"),
    ])
    assert agent.run("sum it") == 6
    assert agent.run("now add 4", reset=False) == 10
    second_prompt = model.calls[1]
    assert any("sum it" in m["content"] for m in second_prompt if isinstance(m["content"], str))
    assert second_prompt[-1]["content"].endswith("now add 4")


def test_reset_clears_memory_and_state(make_code_agent):
    agent, model = make_code_agent([code("kept = 1\nfinal_answer(kept)"), code("final_answer('kept' in dir())")])
    assert agent.run("a") == 1
    assert agent.run("b") is False
    assert len(model.calls[1]) == 2  # system prompt and the new task only


def test_stream_event_sequence(make_code_agent):
    agent, _ = make_code_agent([code("print('hi')"), code("final_answer(3)")])
    events = list(agent.run("t", stream=True))
    kinds = [e.kind for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished" and kinds[-2] == "final_answer"
    assert kinds.count("step_started") == 2 and kinds.count("code_proposed") == 2
    assert "model_text_delta" in kinds and "execution_log" in kinds
    run_ids = {e.run_id for e in events}
    assert len(run_ids) == 1 and all(e.parent_id is None for e in events)
    log = next(e for e in events if isinstance(e, ev.ExecutionLog))
    assert log.text == "hi\n" and log.step == 1
    finished = events[-1]
    assert finished.state == "success" and finished.steps == 2 and finished.token_usage.input_tokens > 0


def test_memory_records_each_step(make_code_agent):
    agent, _ = make_code_agent([code("print(1)"), code("final_answer(2)")])
    result = agent.run("t", return_result=True)
    steps = [s for s in result.steps if isinstance(s, ActionStep)]
    assert [s.step_number for s in steps] == [1, 2]
    first = steps[0]
    assert first.code == "print(1)" and first.logs == "1\n" and first.model_output.startswith("Thought:")
    assert first.model_input_messages[0]["role"] == "system"
    assert first.token_usage.output_tokens > 0 and first.timing.duration_s >= 0
    assert steps[1].is_final_answer and steps[1].action_output == 2
    assert result.token_usage.input_tokens == sum(s.token_usage.input_tokens for s in steps)


def test_artifacts_are_reported(make_code_agent):
    agent, _ = make_code_agent([
        code("open('report.txt', 'w').write('hello')\n"
             "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3])"),
        code("final_answer('ok')"),
    ], authorized_imports=["matplotlib"])
    events = list(agent.run("t", stream=True))
    artifacts = {e.relative_path: e for e in events if isinstance(e, ev.ArtifactCreated)}
    assert "report.txt" in artifacts and artifacts["report.txt"].artifact_kind == "file"
    images = [e for e in artifacts.values() if e.artifact_kind == "image"]
    assert images and images[0].path.endswith(".png")
    with open(images[0].path, "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"


def test_replay_running_out_is_a_clear_error(make_code_agent):
    agent, _ = make_code_agent([code("x = 1")], max_steps=5)
    result = agent.run("t", return_result=True)
    assert result.state is RunState.ERROR and "ReplayExhaustedError" in result.error
    import pytest

    from agents.errors import ReplayExhaustedError
    agent2, _ = make_code_agent(ReplayModel([code("x = 1")]), max_steps=5)
    with pytest.raises(ReplayExhaustedError):
        agent2.run("t")


def test_a_chart_saved_by_the_code_is_not_saved_twice(make_code_agent):
    agent, _ = make_code_agent([
        code("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig('mine.png', dpi=50)"),
        code("plt.figure()\nplt.plot([3, 1])"),  # left open: saved automatically
        code("final_answer('ok')"),
    ], authorized_imports=["matplotlib"])
    events = list(agent.run("t", stream=True))
    images = [e.relative_path for e in events if isinstance(e, ev.ArtifactCreated) and e.artifact_kind == "image"]
    assert images[0] == "mine.png" and len(images) == 2, images
    assert images[1].startswith("figure_step2")


def test_each_step_emits_the_observation_the_model_sees_next(make_code_agent):
    agent, model = make_code_agent([code("print('hello')\n6 * 7"), code("undefined_name"), code("final_answer(1)")])
    events = list(agent.run("t", stream=True))
    observations = [e for e in events if isinstance(e, ev.Observation)]
    assert [o.step for o in observations] == [1, 2, 3]
    assert observations[0].text == model.calls[1][-1]["content"]  # exactly the next prompt's last message
    assert "hello" in observations[0].text and "42" in observations[0].text
    assert observations[1].text == model.calls[2][-1]["content"] and "NameError" in observations[1].text


def test_a_sandbox_that_breaks_the_protocol_is_reported_to_the_model_and_the_person(make_code_agent, monkeypatch):
    """Code that tampers with the sandbox's channel (here a frame that is not a JSON object, as code holding the
    real `os` could write) gets an untrusted result: the model is told the sandbox misbehaved and its variables
    were reset, the person sees it as the step's error, and the forged output is not believed."""
    tamper = "import os, sys\nos.write(int(sys.argv[3]), (6).to_bytes(4, 'big') + b'[1, 2]')\n'forged output'"
    import agents.executor

    # The agent's sandbox with the Python layers off (as the attack suites run it): the code holds the real `os`.
    monkeypatch.setattr(agents.executor, "PythonSandbox",
                        functools.partial(agents.executor.PythonSandbox, python_layers=False))
    agent, model = make_code_agent([code("kept = 1"), code(tamper), code("'kept' in dir()"), "It is done."],
                                   max_steps=3)
    events = list(agent.run("t", stream=True))
    observation = model.calls[2][-1]["content"]
    assert "The sandbox misbehaved; its variables were reset" in observation, observation
    assert "forged output" not in observation
    errors = [e for e in events if isinstance(e, ev.StepError)]
    assert [e.error_type for e in errors] == ["SandboxMisbehaved"], [e.message for e in errors]
    assert "its variables were reset" in errors[0].message and errors[0].step == 2
    assert [s.observations for s in agent.memory.action_steps()][2].endswith("Last output from code snippet:\nFalse")


def test_a_last_expression_frame_reaches_the_model_readable_and_the_person_as_a_table(make_code_agent):
    """Issue 31: `summary` as the code's last line reached the model as one line of literal `\\n` (a frame's repr
    repr'd again) and showed nothing in the chat."""
    agent, model = make_code_agent([
        code("import pandas as pd\nsummary = pd.DataFrame({'city': ['Oslo', 'Rome'], 'rain': [7.5, 2.25]})\n"
             "summary"),
        code("final_answer('done')"),
    ], authorized_imports=["pandas"])
    events = list(agent.run("t", stream=True))
    seen = model.calls[1][-1]["content"]
    assert "Last output from code snippet:\n" in seen and "\\n" not in seen
    assert any(line.split() == ["0", "Oslo", "7.50"] for line in seen.splitlines())
    [observation] = [e for e in events if isinstance(e, ev.Observation) and e.step == 1]
    assert observation.value is not None and observation.value["type"] == "DataFrame"
    assert observation.value["table"] == {"columns": ["", "city", "rain"], "rows": [["0", "Oslo", 7.5],
                                                                                    ["1", "Rome", 2.25]],
                                          "shape": [2, 2]}
    assert list(agent.memory.action_steps())[0].last_value == observation.value


def test_a_frame_given_as_the_final_answer_carries_its_table_live_and_when_replayed(make_code_agent, tmp_path):
    """Issue 31: `final_answer(df)` showed as static text in the chat while a step's frame is Gradio's table: the
    answer's event carries the frame's checked table, and the saved chat's replay gives the same."""
    from agents.memory.serialize import memory_from_dict, memory_to_dict
    from agents.step_events.replaying import replay

    agent, _ = make_code_agent([
        code("import pandas as pd\nfinal_answer(pd.DataFrame({'city': ['Oslo', 'Rome'], 'rain': [7.5, 2.25]}))"),
    ], authorized_imports=["pandas"])
    [live] = [e for e in agent.run("t", stream=True) if isinstance(e, ev.FinalAnswer)]
    assert live.table is not None and live.table["type"] == "DataFrame"
    assert live.table["table"]["rows"] == [["0", "Oslo", 7.5], ["1", "Rome", 2.25]]
    saved = memory_from_dict(memory_to_dict(agent.memory))
    [replayed] = [e for _, events in replay(saved.steps, tmp_path) for e in events if isinstance(e, ev.FinalAnswer)]
    assert replayed.table == live.table
