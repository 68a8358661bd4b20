"""Shared helpers for agent tests: scripted agents that always get closed."""
from __future__ import annotations

import pytest

from agents import CodeAgent, ReplayModel, ToolCallingAgent


@pytest.fixture(autouse=True)
def gradio_client_as_shipped(monkeypatch):
    """gradio_client as a user has it: the UI tests' helper (tests/ui/ui_testlib.py) makes it list a page's
    undocumented events too, and a Space tool must see only the documented ones."""
    import gradio_client.utils

    monkeypatch.setattr(gradio_client.utils, "RAW_API_INFO_URL", "info?serialize=False")


@pytest.fixture
def make_code_agent(tmp_path):
    created: list[CodeAgent] = []

    def make(replies, **kwargs) -> tuple[CodeAgent, ReplayModel]:
        model = replies if isinstance(replies, ReplayModel) else ReplayModel(replies)
        kwargs.setdefault("verbosity", 0)
        kwargs.setdefault("workdir", tmp_path / f"ws{len(created)}")
        agent = CodeAgent(model=model, **kwargs)
        created.append(agent)
        return agent, model

    yield make
    for agent in created:
        agent.close()


@pytest.fixture
def make_tool_agent():
    def make(replies, **kwargs) -> tuple[ToolCallingAgent, ReplayModel]:
        model = replies if isinstance(replies, ReplayModel) else ReplayModel(replies)
        kwargs.setdefault("verbosity", 0)
        return ToolCallingAgent(model=model, **kwargs), model
    return make


def call(name: str, **arguments) -> str:
    """A JSON action as a model would write it."""
    import json
    return "Action:\n" + json.dumps({"name": name, "arguments": arguments})


def code(source: str, thought: str = "I will run code.") -> str:
    return f"Thought: {thought}\n```python\n{source}\n```"
