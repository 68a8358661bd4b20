"""Agents and tools through the Hugging Face Hub, against a loopback stand-in of its API (tests/agents/hub_standin.py):
what huggingface_hub asks for, code refused without trust_remote_code (and not run), Hub tools pausing for approval,
and the workbench's AGENTDECK_HUB_TOOLS."""
from __future__ import annotations

import base64
import json

import pytest

from agents import CodeAgent, ReplayModel, ToolCallingAgent, load_tool
from agents.decisions import ApprovalPolicy, Decision, ScriptedDecider
from agents.errors import UntrustedCodeError
from agents.models import LiteLLMModel
from tests.agents import sharing_tools
from tests.agents.hub_standin import HubStandIn, Repo, point_huggingface_hub_at

TOKEN = "hf_stand_in_token"


@pytest.fixture
def hub(tmp_path, monkeypatch):
    with HubStandIn() as stand_in:
        point_huggingface_hub_at(stand_in, monkeypatch, tmp_path)
        yield stand_in


def _committed_paths(hub: HubStandIn) -> list[str]:
    commit = next(r for r in hub.requests if r.path.endswith("/commit/main"))
    lines = [json.loads(line) for line in commit.body.decode().splitlines() if line.strip()]
    return sorted(item["value"]["path"] for item in lines if item["key"] == "file")


def test_an_agent_is_pushed_and_loaded_back_through_the_hub(hub, tmp_path):
    model = LiteLLMModel("openai/gpt-4.1-mini", api_key="sk-never-uploaded")
    helper = ToolCallingAgent(tools=[sharing_tools.Greeter()], model=model, name="helper", description="Greets.",
                              verbosity=0)
    agent = CodeAgent(tools=[sharing_tools.scale], model=model, managed_agents=[helper], max_steps=6, verbosity=0)
    url = agent.push_to_hub("team/analyst", token=TOKEN, endpoint=hub.url, commit_message="First version")
    assert url.startswith(f"{hub.url}/team/analyst/commit/")
    assert hub.calls() == ["POST /api/repos/create", "POST /api/validate-yaml",
                           "POST /api/models/team/analyst/preupload/main", "POST /api/models/team/analyst/commit/main"]
    card = json.loads(next(r for r in hub.requests if r.path == "/api/validate-yaml").body)["content"]
    assert card.startswith("---\nlibrary_name: agentdeck\n")
    create = next(r for r in hub.requests if r.path == "/api/repos/create")
    assert create.headers["authorization"] == f"Bearer {TOKEN}"
    assert {k: json.loads(create.body).get(k) for k in ("name", "organization")} == \
        {"name": "analyst", "organization": "team"}
    assert _committed_paths(hub) == [
        "README.md", "agent.json", "managed_agents/helper/README.md", "managed_agents/helper/agent.json",
        "managed_agents/helper/prompts.yaml", "managed_agents/helper/tools/final_answer/tool.json",
        "managed_agents/helper/tools/greet/tool.json", "managed_agents/helper/tools/greet/tool.py",
        "prompts.yaml", "tools/scale/tool.json", "tools/scale/tool.py"]
    commit = next(r for r in hub.requests if r.path.endswith("/commit/main"))
    header = json.loads(commit.body.decode().splitlines()[0])
    assert header == {"key": "header", "value": {"summary": "First version", "description": ""}}
    assert all(b"sk-never-uploaded" not in data for data in hub.repos["team/analyst"].files.values())
    agent.close()

    before = len(hub.calls())
    loaded = CodeAgent.from_hub("team/analyst", trust_remote_code=True, endpoint=hub.url, model=ReplayModel([]))
    try:
        downloads = hub.calls()[before:]
        commit = hub.repos["team/analyst"].sha
        assert downloads[:2] == ["GET /api/models/team/analyst/revision/main",
                                 f"GET /api/models/team/analyst/tree/{commit}"]
        assert f"GET /team/analyst/resolve/{commit}/tools/scale/tool.py" in downloads
        assert loaded.max_steps == 6 and loaded.tools["scale"](x=2) == 5.0
        helper_loaded = loaded.managed_agents["helper"]
        assert helper_loaded.tools["greet"](who="Bo") == "Hello, Bo!"
        # Tools that came from the Hub pause for approval, the managed agent's too.
        assert loaded.tools["scale"].requires_approval and helper_loaded.tools["greet"].requires_approval
        assert "Hugging Face Hub" in loaded.tools["scale"].approval_reason
        policy = ApprovalPolicy.from_mode("approve_tools")
        assert [t.name for t in policy.covered_tools(loaded.tools.values())] == ["scale"]
        assert sharing_tools.scale.requires_approval is False  # the class's own setting is left alone
    finally:
        loaded.close()
    relaxed = CodeAgent.from_hub("team/analyst", trust_remote_code=True, tools_require_approval=False,
                                 endpoint=hub.url, model=ReplayModel([]))
    assert relaxed.tools["scale"].requires_approval is False
    relaxed.close()


def _plant_tool_repo(hub: HubStandIn, tmp_path, repo_id: str) -> str:
    """A Hub tool repo whose file, when it runs, leaves a marker file: proof of whether its code ran."""
    marker = tmp_path / "the-tool-file-ran"
    folder = sharing_tools.Greeter().save(tmp_path / "planted")
    source = (folder / "tool.py").read_text()
    (folder / "tool.py").write_text(f"open({str(marker)!r}, 'w').close()\n" + source)
    hub.repos[repo_id] = Repo(files={name: (folder / name).read_bytes() for name in ("tool.json", "tool.py")},
                              commits=["a" * 40])
    return str(marker)


def test_code_from_the_hub_runs_only_when_trusted_and_the_refusal_says_what_would_run(hub, tmp_path):
    import os

    marker = _plant_tool_repo(hub, tmp_path, "mallory/greet")
    with pytest.raises(UntrustedCodeError) as refused:
        load_tool("mallory/greet", endpoint=hub.url)
    assert "tool.py (tool 'greet')" in str(refused.value) and "trust_remote_code=True" in str(refused.value)
    assert not os.path.exists(marker)  # downloaded, listed, and not run
    tool = load_tool("mallory/greet", trust_remote_code=True, endpoint=hub.url)
    assert os.path.exists(marker) and tool(who="Eve") == "Hello, Eve!"
    assert tool.requires_approval is True
    assert load_tool("mallory/greet", trust_remote_code=True, requires_approval=False,
                     endpoint=hub.url).requires_approval is False


def test_an_agent_from_the_hub_without_trust_lists_its_tools_and_templates(hub, tmp_path):
    ToolCallingAgent(tools=[sharing_tools.scale], model=ReplayModel([]), verbosity=0).push_to_hub(
        "team/calc", endpoint=hub.url, token=TOKEN)
    with pytest.raises(UntrustedCodeError) as refused:
        ToolCallingAgent.from_hub("team/calc", endpoint=hub.url, model=ReplayModel([]))
    message = str(refused.value)
    assert "prompts.yaml (prompt templates)" in message and "tools/scale/tool.py (tool 'scale')" in message


def test_a_tool_is_pushed_and_loaded_back_and_only_its_files_are_downloaded(hub):
    sharing_tools.scale.push_to_hub("alice/scale", endpoint=hub.url, token=TOKEN)
    assert sorted(hub.repos["alice/scale"].files) == ["tool.json", "tool.py"]
    hub.repos["alice/scale"].files["weights.bin"] = b"\0" * 4096  # a repo that also holds other things
    assert b"SCALE = 2.5" in hub.repos["alice/scale"].files["tool.py"]
    tool = load_tool("alice/scale", trust_remote_code=True, endpoint=hub.url)
    assert tool(x=4) == 10.0 and tool.requires_approval
    assert not any(c.endswith("/weights.bin") for c in hub.calls())


def test_the_workbench_loads_the_hub_tools_the_operator_lists(hub, tmp_path, monkeypatch):
    from tools.registry import ToolSettings, load_tool_catalog

    monkeypatch.chdir(tmp_path)
    sharing_tools.Greeter().save(tmp_path / "alice" / "scale")  # a local folder named like a listed repo: not used

    sharing_tools.scale.push_to_hub("alice/scale", endpoint=hub.url)
    sharing_tools.Greeter().push_to_hub("alice/greet", endpoint=hub.url)
    settings = ToolSettings.from_env({"AGENTDECK_HUB_TOOLS": "alice/scale, alice/greet@main,alice/missing",
                                      "AGENTDECK_HUB_TOOLS_NO_APPROVAL": "alice/greet", "HF_ENDPOINT": hub.url})
    catalog = load_tool_catalog(settings, include_mcp=False)
    assert catalog.entries["scale"].source == "hub:alice/scale" and catalog.entries["greet"].source == "hub:alice/greet"
    assert catalog.entries["scale"].tool.requires_approval is True
    assert catalog.entries["greet"].tool.requires_approval is False
    assert catalog.entries["scale"].tool(x=2) == 5.0 and "hub:alice/scale" not in {
        e.source for e in catalog.entries.values() if e.name == "greet"}
    assert [e for e in catalog.errors if "alice/missing" in e], catalog.errors
    assert "GET /api/models/alice/greet/revision/main" in hub.calls()


def test_the_stand_in_decodes_what_huggingface_hub_sends(hub):
    """The stand-in itself: an upload's files arrive byte for byte (base64 in the NDJSON commit)."""
    sharing_tools.scale.push_to_hub("alice/bytes", endpoint=hub.url)
    commit = next(r for r in hub.requests if r.path == "/api/models/alice/bytes/commit/main")
    files = {json.loads(line)["value"]["path"]: json.loads(line)["value"]["content"]
             for line in commit.body.decode().splitlines()[1:]}
    assert base64.b64decode(files["tool.py"]) == hub.repos["alice/bytes"].files["tool.py"]


def test_the_workbench_offers_an_operators_hub_tool_and_pauses_for_it(hub, tmp_path, monkeypatch):
    """From the operator's configuration to a visitor's run: AGENTDECK_HUB_TOOLS names a repo id, the settings
    form offers its tool with the built-ins, and chosen under "Approve sensitive tool calls" its call waits for a
    decision before the Hub's code runs."""
    from ui import tool_offer

    sharing_tools.scale.push_to_hub("alice/scale", endpoint=hub.url)
    monkeypatch.setenv("AGENTDECK_HUB_TOOLS", "alice/scale")
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setattr(tool_offer, "_TOOL_CACHE", None)  # the registry again, with the operator's Hub tool
    try:
        assert "scale" in dict(tool_offer.available_tools())
        [scale] = tool_offer.select_tools(("scale",))
        model = ReplayModel(["```python\nprint(scale(x=2))\n```", "```python\nfinal_answer('ok')\n```"])
        decider = ScriptedDecider([Decision.approve()])
        agent = CodeAgent(tools=[scale], model=model, workdir=tmp_path / "ws", verbosity=0,
                          approval_policy="approve_tools", decider=decider)
        try:
            assert agent.run("Scale two.") == "ok"
            [asked] = decider.requests  # the Hub tool's call waited for a decision, and only it
            assert asked.kind.value == "tool_call" and "scale" in str(asked.payload)
            assert "5.0" in model.calls[1][-1]["content"]  # approved, it ran: scale(2) = 2 * 2 + 1
        finally:
            agent.close()
    finally:
        monkeypatch.setattr(tool_offer, "_TOOL_CACHE", None)
