"""Each tool called from code in the sandbox by a CodeAgent driven by a ReplayModel (and final_answer by a
ToolCallingAgent). Tools run in the app process; the sandboxed code reaches them through the executor."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from tools_testlib import LocalServer, Reply, Request, write_wav

pytest.importorskip("agents.loop.code_agent")
pytest.importorskip("agents.executor")

from agents import CodeAgent, ReplayModel
from agents.tooling.final_answer import FinalAnswerTool
from tools.visit_webpage import VisitWebpageTool


def code(text: str) -> str:
    return f"```python\n{text}\n```"


def run_code_agent(tools: list[Any], replies: list[str], tmp_path: Path) -> tuple[Any, ReplayModel]:
    model = ReplayModel(replies)
    agent = CodeAgent(tools=tools, model=model, max_steps=4, workdir=tmp_path / "work", verbosity=0)
    return agent.run("Use the tool."), model


def _seen_by_model(model: ReplayModel) -> str:
    return json.dumps([m for call in model.calls for m in call], default=str)


def test_visit_webpage_in_agent(local_server: LocalServer, tmp_path: Path) -> None:
    local_server.routes["/page"] = Reply(200, "<html><head><title>Agent page</title></head><body><nav>MENU</nav>"
                                              "<h1>Hello from the page</h1></body></html>",
                                         {"Content-Type": "text/html"})
    result, _ = run_code_agent(
        [VisitWebpageTool(allow_private=True)],
        [code(f"r = visit_webpage(url='{local_server.base}/page')\nprint(r)"), code("final_answer(r[:60])")],
        tmp_path)
    assert result.startswith("# Agent page") and "MENU" not in result


def test_visit_webpage_refusal_reaches_the_model(local_server: LocalServer, tmp_path: Path) -> None:
    local_server.routes["/page"] = Reply(200, "<html><body>secret</body></html>", {"Content-Type": "text/html"})
    result, model = run_code_agent(
        [VisitWebpageTool()],
        [code(f"visit_webpage(url='{local_server.base}/page')"), code("final_answer('refused')")],
        tmp_path)
    assert result == "refused"
    assert "non-public" in _seen_by_model(model)
    assert local_server.requests == []


def test_web_search_in_agent(local_server: LocalServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from ddgs.engines.duckduckgo import Duckduckgo

    from tools.web_search import WebSearchTool

    monkeypatch.setattr(Duckduckgo, "search_url", f"{local_server.base}/html/")

    def search(request: Request) -> Reply:
        query = parse_qs(request.body.decode())["q"][0]
        return Reply(200, f'<html><body><div class="result__body"><h2><a href="https://example.org/x">About {query}</a>'
                          f'</h2><a class="result__snippet" href="https://example.org/x">Snippet</a></div></body></html>',
                     {"Content-Type": "text/html"})

    local_server.routes["/html/"] = search
    result, _ = run_code_agent(
        [WebSearchTool()],
        [code("r = web_search(query='sandboxes', max_results=1)\nprint(r)"), code("final_answer(r)")], tmp_path)
    assert "1. [About sandboxes](https://example.org/x)" in result


def test_wikipedia_search_in_agent(local_server: LocalServer, tmp_path: Path) -> None:
    from tools.wikipedia_search import WikipediaSearchTool

    def wiki(request: Request) -> Reply:
        if request.path.endswith("/w/api.php"):
            body: dict[str, Any] = {"query": {"search": [{"title": "Alan Turing"}]}}
        else:
            body = {"title": "Alan Turing", "extract": "Alan Turing was a mathematician.", "type": "standard"}
        return Reply(200, json.dumps(body), {"Content-Type": "application/json"})

    local_server.fallback = wiki
    result, _ = run_code_agent(
        [WikipediaSearchTool(base_url=local_server.base + "/{lang}")],
        [code("s = wikipedia_search(query='Turing', language='en')"), code("final_answer(s)")], tmp_path)
    assert result.startswith("# Alan Turing") and "mathematician" in result


@pytest.mark.slow
def test_speech_to_text_in_agent(tiny_whisper: Path, tmp_path: Path) -> None:
    import numpy as np

    from tools.speech_to_text import SpeechToTextTool

    wav = write_wav(tmp_path / "note.wav", 0.3 * np.sin(np.arange(16000) / 16000 * 2 * np.pi * 300))
    result, _ = run_code_agent(
        [SpeechToTextTool(model_id=str(tiny_whisper))],
        [code(f"t = speech_to_text(audio={str(wav)!r})"), code("final_answer(type(t).__name__ + ':' + t[:20])")],
        tmp_path)
    assert isinstance(result, str) and result.startswith("str:")


@pytest.mark.slow
def test_mcp_tool_in_agent(tmp_path: Path) -> None:
    from tools.mcp_client import MCPToolset

    server = Path(__file__).with_name("mcp_demo_server.py")
    with MCPToolset({"command": sys.executable, "args": [str(server)]}) as toolset:
        result, _ = run_code_agent(toolset.tools, [code("s = add(a=20, b=22)"), code("final_answer(int(s))")], tmp_path)
    assert result == 42


def test_user_tool_in_agent(tmp_path: Path) -> None:
    from tools.user_tools import load_user_tools

    file = tmp_path / "mine.py"
    file.write_text("from tools import tool\n\n@tool\ndef double(x: int) -> int:\n    '''Doubles x.\n\n"
                    "    Args:\n        x: A number.\n    '''\n    return 2 * x\n")
    tools = load_user_tools(str(file)).tools
    result, _ = run_code_agent(list(tools.values()), [code("final_answer(double(x=21))")], tmp_path)
    assert result == 42


def test_final_answer_with_tool_calling_agent(local_server: LocalServer) -> None:
    from agents import ToolCallingAgent

    local_server.routes["/t.txt"] = Reply(200, "plain words", {"Content-Type": "text/plain"})
    model = ReplayModel([
        {"content": "", "tool_calls": [{"name": "visit_webpage", "arguments": {"url": f"{local_server.base}/t.txt"},
                                        "id": "c1"}]},
        {"content": "", "tool_calls": [{"name": "final_answer", "arguments": {"answer": {"words": 2}}, "id": "c2"}]},
    ])
    agent = ToolCallingAgent(tools=[VisitWebpageTool(allow_private=True), FinalAnswerTool()], model=model,
                             max_steps=3, verbosity=0)
    assert agent.run("Count the words.") == {"words": 2}
    assert "plain words" in _seen_by_model(model)
