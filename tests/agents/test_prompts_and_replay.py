"""Prompt templates (YAML + strict Jinja2) and the ReplayModel."""
from __future__ import annotations

import json

import pytest

from agents import ReplayModel, ToolCallingAgent
from agents.errors import ConfigurationError, PromptTemplateError, ReplayExhaustedError
from agents.prompts import load_prompt_templates, render


def test_every_agent_kind_has_its_templates():
    for kind in ("code_agent", "tool_calling_agent"):
        templates = load_prompt_templates(kind)
        for key in ("system_prompt", "task", "planning", "final_answer", "managed_agent", "observations",
                    "parse_error"):
            assert key in templates, (kind, key)


def test_strict_undefined_variables_fail_clearly():
    templates = load_prompt_templates("code_agent", {"task": "Do {{ tsak }}"})
    with pytest.raises(PromptTemplateError, match="undefined variable"):
        render(templates, "task", task="x")
    with pytest.raises(PromptTemplateError, match="missing"):
        render(templates, "no.such.key")


def test_user_overrides_and_custom_instructions_reach_the_model():
    model = ReplayModel(['{"name": "final_answer", "arguments": {"answer": 1}}'])
    agent = ToolCallingAgent(tools=[], model=model, verbosity=0, instructions="Always answer in French.",
                             prompt_templates={"task": "TASK>> {{ task }}"})
    assert agent.run("hi") == 1
    sent = model.calls[0]
    assert sent[0]["role"] == "system" and "Always answer in French." in sent[0]["content"]
    assert sent[-1] == {"role": "user", "content": "TASK>> hi"}


def test_replay_streams_records_and_runs_out_clearly():
    model = ReplayModel(["hello world, this is long enough to stream in pieces"], chunk_size=8)
    deltas = list(model.generate_stream([{"role": "user", "content": "hi"}]))
    assert len(deltas) > 2
    assert "".join(d.content for d in deltas) == "hello world, this is long enough to stream in pieces"
    assert deltas[-1].reply is not None and deltas[-1].reply.token_usage.output_tokens > 0
    assert model.calls == [[{"role": "user", "content": "hi"}]]
    with pytest.raises(ReplayExhaustedError, match="has 1 replies and call 2"):
        model.generate([{"role": "user", "content": "again"}])


def test_replay_honours_stop_sequences():
    model = ReplayModel(["code\n```\nObservation: fake"])
    assert model.generate([], stop_sequences=["Observation:"]).content == "code\n```\n"


def test_replay_from_yaml_and_json_files(tmp_path):
    yaml_file = tmp_path / "t.yaml"
    yaml_file.write_text("- first reply\n- second reply\n")
    assert ReplayModel.from_file(yaml_file).replies == ["first reply", "second reply"]
    json_file = tmp_path / "t.json"
    json_file.write_text(json.dumps({"model_id": "rec", "replies": [{"content": "x", "token_usage":
                                                                        {"input_tokens": 3, "output_tokens": 1}}]}))
    model = ReplayModel.from_file(json_file)
    reply = model.generate([])
    assert (reply.content, reply.token_usage.input_tokens, model.model_id) == ("x", 3, "rec")


@pytest.mark.parametrize("content,message", [
    ("", "non-empty list"), ("just: a mapping\n", "non-empty list"), ("- [unclosed\n", "not valid YAML"),
])
def test_replay_bad_files(tmp_path, content, message):
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(ConfigurationError, match=message):
        ReplayModel.from_file(path)
    with pytest.raises(ConfigurationError, match="not found"):
        ReplayModel.from_file(tmp_path / "missing.yaml")
