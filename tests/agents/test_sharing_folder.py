"""Agents and tools saved as folders and made again: tools (source and built-in), managed agents, prompt templates,
model string, settings; keys never written; a tool's file checked when it is loaded."""
from __future__ import annotations

import json

import pytest

from agents import CodeAgent, MultiStepAgent, ReplayModel, ToolCallingAgent, load_tool
from agents.errors import SharingError
from agents.models import InferenceClientModel, LiteLLMModel
from tests.agents import sharing_tools
from tests.agents.conftest import call

SECRET = "sk-live-DO-NOT-WRITE-4711"


def _files_text(folder) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in sorted(folder.rglob("*")) if p.is_file())


def _team(model) -> CodeAgent:
    helper = ToolCallingAgent(tools=[sharing_tools.Greeter()], model=model, name="helper",
                              description="Greets people.", max_steps=4, max_parallel_calls=2, verbosity=0)
    return CodeAgent(tools=[sharing_tools.scale], model=model, managed_agents=[helper], max_steps=7,
                     planning_interval=3, authorized_imports=["pandas"], executor_timeout_s=12.0,
                     instructions="Answer in French.", context_budget=5000, verbosity=0,
                     prompt_templates={"managed_agent": {"task": "Team task for {{name}}: {{task}}"}})


def test_a_code_agent_and_its_team_round_trip_through_a_folder(tmp_path):
    model = LiteLLMModel("openai/gpt-4.1-mini", api_key=SECRET)
    agent = _team(model)
    agent.save(tmp_path / "team")
    loaded = CodeAgent.from_folder(tmp_path / "team")
    try:
        assert type(loaded) is CodeAgent
        assert (loaded.max_steps, loaded.planning_interval, loaded.executor_timeout_s, loaded.instructions) == \
            (7, 3, 12.0, "Answer in French.")
        assert loaded.authorized_imports == agent.authorized_imports and "pandas" in loaded.authorized_imports
        assert loaded.compactor.context_budget == 5000
        assert loaded.prompt_templates == agent.prompt_templates
        assert loaded.prompt_templates["managed_agent"]["task"] == "Team task for {{name}}: {{task}}"
        assert isinstance(loaded.model, LiteLLMModel) and loaded.model.model_id == "openai/gpt-4.1-mini"
        assert list(loaded.tools) == ["scale"]
        assert loaded.tools["scale"].inputs == sharing_tools.scale.inputs
        assert loaded.tools["scale"](x=2) == 5.0 and loaded.tools["scale"](x=1 / 3, digits=3) == 0.833
        helper = loaded.managed_agents["helper"]
        assert type(helper) is ToolCallingAgent and (helper.max_steps, helper.max_parallel_calls) == (4, 2)
        assert helper.description == "Greets people."
        assert helper.tools["greet"](who="Ada") == "Hello, Ada!"
        assert set(helper.tools) == {"greet", "final_answer"}
    finally:
        loaded.close()
        agent.close()


def test_no_key_or_token_of_the_model_reaches_the_folder(tmp_path):
    litellm_agent = _team(LiteLLMModel("openai/gpt-4.1-mini", api_key=SECRET, api_base="http://127.0.0.1:9/v1"))
    hf_agent = ToolCallingAgent(tools=[], model=InferenceClientModel("Qwen/Qwen2.5-Coder-32B-Instruct",
                                                                     token=SECRET), verbosity=0)
    litellm_agent.save(tmp_path / "litellm")
    hf_agent.save(tmp_path / "hf")
    for folder in ("litellm", "hf"):
        text = _files_text(tmp_path / folder)
        assert "gpt-4.1-mini" in text or "Qwen2.5" in text  # the folder was written, with the model's name
        assert SECRET not in text
    assert json.loads((tmp_path / "hf" / "agent.json").read_text())["model"]["string"] == \
        "hf:Qwen/Qwen2.5-Coder-32B-Instruct"
    litellm_agent.close()


def test_keyword_arguments_replace_what_was_saved_the_model_for_the_whole_team(tmp_path):
    _team(ReplayModel([], model_id="scripted")).save(tmp_path / "team")
    with pytest.raises(SharingError, match="no model string .*ReplayModel.*pass model="):
        CodeAgent.from_folder(tmp_path / "team")
    model = ReplayModel([])
    loaded = CodeAgent.from_folder(tmp_path / "team", model=model, max_steps=2)
    try:
        assert loaded.model is model and loaded.managed_agents["helper"].model is model
        assert loaded.max_steps == 2 and loaded.planning_interval == 3
    finally:
        loaded.close()


def test_a_loaded_tool_calling_agent_runs_with_its_saved_tools(tmp_path):
    ToolCallingAgent(tools=[sharing_tools.scale], model=ReplayModel([]), verbosity=0).save(tmp_path / "agent")
    model = ReplayModel([call("scale", x=4), call("final_answer", answer="done")])
    loaded = MultiStepAgent.from_folder(tmp_path / "agent", model=model)
    assert type(loaded) is ToolCallingAgent
    assert loaded.run("Scale 4.") == "done"
    assert "10.0" in model.calls[1][-1]["content"]  # the saved tool ran and the model saw its output


def test_the_saved_file_carries_what_the_tool_needs_not_its_module(tmp_path, monkeypatch):
    sharing_tools.scale.save(tmp_path / "scale")
    source = (tmp_path / "scale" / "tool.py").read_text()
    assert "SCALE = 2.5" in source and "import math" in source
    monkeypatch.setattr(sharing_tools, "SCALE", 100.0)  # the original module changes after the save
    loaded = load_tool(tmp_path / "scale")
    assert loaded(x=2) == 5.0 and sharing_tools.scale(x=2) == 200.0
    assert loaded.requires_approval is False  # a folder of your own keeps what the tool declares
    assert load_tool(tmp_path / "scale", requires_approval=True).requires_approval is True
    loaded.save(tmp_path / "again")  # a loaded tool is saved again from the source it was made of
    assert (tmp_path / "again" / "tool.py").read_text() == source


def test_a_tool_class_of_agentdecks_own_packages_is_saved_by_name(tmp_path):
    from tools.web_search import WebSearchTool

    ToolCallingAgent(tools=[WebSearchTool()], model=ReplayModel([]), verbosity=0).save(tmp_path / "a")
    manifest = json.loads((tmp_path / "a" / "tools" / "web_search" / "tool.json").read_text())
    assert manifest["kind"] == "builtin" and manifest["class"] == "tools.web_search:WebSearchTool"
    assert not (tmp_path / "a" / "tools" / "web_search" / "tool.py").exists()
    loaded = ToolCallingAgent.from_folder(tmp_path / "a", model=ReplayModel([]))
    assert type(loaded.tools["web_search"]) is WebSearchTool


def test_a_built_in_reference_outside_agentdeck_is_refused(tmp_path):
    folder = sharing_tools.Greeter().save(tmp_path / "greet")
    manifest = json.loads((folder / "tool.json").read_text())
    manifest.update(kind="builtin", **{"class": "subprocess:Popen"})
    (folder / "tool.json").write_text(json.dumps(manifest))
    with pytest.raises(SharingError, match="'subprocess:Popen' is not a tool of AgentDeck's own packages"):
        load_tool(folder)


@pytest.mark.parametrize(("tool", "message"), [
    (sharing_tools.shout, r"uses '_helper', defined next to it in tests.agents.sharing_tools: move it inside"),
    (sharing_tools.NeedsArguments("x"), r"made again without arguments, and its constructor needs some"),
])
def test_a_tool_that_cannot_travel_alone_is_refused_when_saved(tmp_path, tool, message):
    with pytest.raises(SharingError, match=message):
        tool.save(tmp_path / "t")


def test_a_closure_tool_is_refused_when_saved(tmp_path):
    from agents import tool

    factor = 3

    @tool
    def times(x: int) -> int:
        """Multiply.

        Args:
            x: The number.
        """
        return x * factor

    with pytest.raises(SharingError, match=r"uses variables of the function it is defined in \(factor\)"):
        times.save(tmp_path / "t")


def _edit_source(folder, text: str) -> None:
    (folder / "tool.py").write_text(text)


@pytest.mark.parametrize(("source", "message"), [
    ("from agents import tool\n\n@tool\ndef scale(x: float) -> float\n    return x\n",
     r"tool\.py, line 4: the tool's source has a syntax error"),
    ("x = 1\n", r"must define exactly one tool, 'scale'; it defines 0 \(none\)"),
    ("import tests.agents.sharing_tools as t\nscale = t.scale\ngreet = t.Greeter()\n",
     r"must define exactly one tool, 'scale'; it defines 2 \(greet, scale\)"),
    ("from tests.agents.sharing_tools import Greeter\ng = Greeter()\n",
     r"defines the tool 'greet', but its manifest names 'scale'"),
    ("raise RuntimeError('boom')\n", r"tool\.py, line 1: the tool's file failed to run: RuntimeError: boom"),
    ("from agents import tool\n\n@tool\ndef scale(y: float) -> float:\n    \"\"\"S.\n\n    Args:\n"
     "        y: A number.\n    \"\"\"\n    return y\n", r"defines inputs \['y'\] for 'scale', but its manifest lists"),
])
def test_a_tool_file_is_checked_when_loaded(tmp_path, source, message):
    folder = sharing_tools.scale.save(tmp_path / "scale")
    _edit_source(folder, source)
    with pytest.raises(SharingError, match=message):
        load_tool(folder)


def test_a_folder_of_a_later_format_is_refused(tmp_path):
    folder = sharing_tools.scale.save(tmp_path / "scale")
    manifest = json.loads((folder / "tool.json").read_text())
    (folder / "tool.json").write_text(json.dumps({**manifest, "version": 2}))
    with pytest.raises(SharingError, match="format version 2; this AgentDeck reads version 1"):
        load_tool(folder)


def test_a_folder_of_another_kind_or_shape_is_refused_with_what_to_do(tmp_path):
    ToolCallingAgent(tools=[], model=ReplayModel([]), verbosity=0).save(tmp_path / "tc")
    with pytest.raises(SharingError, match="holds a ToolCallingAgent, not a CodeAgent"):
        CodeAgent.from_folder(tmp_path / "tc", model=ReplayModel([]))
    manifest = json.loads((tmp_path / "tc" / "agent.json").read_text())
    manifest["tools"] = ["../../etc"]
    (tmp_path / "tc" / "agent.json").write_text(json.dumps(manifest))
    with pytest.raises(SharingError, match="`tools` must be a list of Python identifiers"):
        ToolCallingAgent.from_folder(tmp_path / "tc", model=ReplayModel([]))
    with pytest.raises(SharingError, match="holds no agent.json"):
        ToolCallingAgent.from_folder(tmp_path, model=ReplayModel([]))
