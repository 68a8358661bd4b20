"""The built-in tools that reach outside the app declare that they need approval, so the "approve_tools" mode
pauses before their calls (a loopback server shows that a rejected call never leaves the app)."""
from __future__ import annotations

from pathlib import Path

import pytest
from tools_testlib import LocalServer, Reply

from agents import CodeAgent, ReplayModel, tool
from agents import events as ev
from agents.decisions import ApprovalPolicy, Decision, ScriptedDecider
from agents.tooling.ask_user import AskUserTool
from agents.tooling.final_answer import FinalAnswerTool
from tools.speech_to_text import SpeechToTextTool
from tools.visit_webpage import VisitWebpageTool
from tools.web_search import WebSearchTool
from tools.wikipedia_search import WikipediaSearchTool

OUTSIDE = [WebSearchTool(), VisitWebpageTool(), WikipediaSearchTool(), SpeechToTextTool()]


@tool
def word_count(text: str) -> int:
    """Count words.

    Args:
        text: The text.
    """
    return len(text.split())


@pytest.mark.parametrize("built_in", OUTSIDE, ids=lambda t: t.name)
def test_tools_that_reach_outside_declare_they_need_approval(built_in) -> None:
    assert built_in.requires_approval is True and built_in.approval_reason
    bound = built_in.for_workspace("/tmp") if hasattr(built_in, "for_workspace") else built_in
    assert bound.requires_approval is True  # the per-session copy the app gives agents keeps it


def test_each_mode_covers_the_tools_it_pauses_for() -> None:
    tools = [*OUTSIDE, word_count, AskUserTool(), FinalAnswerTool()]
    covered = {mode: [t.name for t in ApprovalPolicy.from_mode(mode).covered_tools(tools)]
               for mode in ("autonomous", "review_plans", "approve_code", "approve_tools", "all")}
    assert covered["approve_tools"] == ["web_search", "visit_webpage", "wikipedia_search", "speech_to_text"]
    assert covered["all"] == [*covered["approve_tools"], "word_count"]  # never the answer or a question
    assert covered["autonomous"] == covered["review_plans"] == covered["approve_code"] == []


def _agent(tmp_path: Path, decider: ScriptedDecider, url: str) -> tuple[CodeAgent, ReplayModel]:
    model = ReplayModel([f"```python\nprint(visit_webpage(url='{url}'))\n```", "```python\nfinal_answer('ok')\n```"])
    agent = CodeAgent(tools=[VisitWebpageTool(allow_private=True)], model=model, max_steps=3, verbosity=0,
                      workdir=tmp_path / "work", approval_policy="approve_tools", decider=decider)
    return agent, model


def test_approve_tools_pauses_before_a_web_page_is_fetched(local_server: LocalServer, tmp_path: Path) -> None:
    local_server.routes["/page"] = Reply(200, "<html><body><h1>Fetched after approval</h1></body></html>",
                                         {"Content-Type": "text/html"})
    decider = ScriptedDecider([Decision.approve()])
    agent, model = _agent(tmp_path, decider, f"{local_server.base}/page")
    try:
        events = list(agent.run("Read the page", stream=True))
    finally:
        agent.close()
    asked = [e for e in events if isinstance(e, ev.DecisionRequested)]
    assert [(e.request_kind, e.payload["tool_name"]) for e in asked] == [("tool_call", "visit_webpage")]
    assert len(local_server.requests) == 1 and "Fetched after approval" in model.calls[1][-1]["content"]


def test_a_rejected_web_call_never_leaves_the_app(local_server: LocalServer, tmp_path: Path) -> None:
    local_server.routes["/page"] = Reply(200, "<html><body>should not be read</body></html>",
                                         {"Content-Type": "text/html"})
    agent, model = _agent(tmp_path, ScriptedDecider([Decision.reject("no browsing today")]),
                          f"{local_server.base}/page")
    try:
        assert agent.run("Read the page") == "ok"
    finally:
        agent.close()
    assert local_server.requests == [] and "no browsing today" in model.calls[1][-1]["content"]
