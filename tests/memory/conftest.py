"""Fixtures for the memory tests: the agent fixtures of tests/agents, a secret, a model that answers summaries."""
from __future__ import annotations

import pytest

from agents.memory.compaction import is_summary_request
from agents.models.base import ModelReply, TokenUsage
from agents.models.replay import ReplayModel
from tests.agents.conftest import make_code_agent, make_tool_agent  # noqa: F401  (fixtures for these tests)

SECRET = b"test-secret-0123456789abcdef"


def sandbox_available() -> bool:
    try:
        from agents.executor import PythonSandbox  # noqa: F401
    except ImportError:
        return False
    return True


needs_sandbox = pytest.mark.skipif(not sandbox_available(),
                                   reason="the PythonSandbox (agents.executor) is not available")


class SummaryAwareReplay(ReplayModel):
    """A ReplayModel whose script holds only the agent's replies; summary requests are answered by
    `summarize(messages)` (a string, "" for an empty reply, or raise to make the call fail)."""

    def __init__(self, replies, summarize=None, **kwargs) -> None:
        super().__init__(replies, **kwargs)
        self.summarize = summarize or (lambda messages: "SUMMARY: earlier steps looked things up.")
        self.summary_calls: list[list[dict]] = []

    def generate(self, messages, stop_sequences=None, tools=None, **kwargs) -> ModelReply:
        if is_summary_request(messages):
            self.summary_calls.append(list(messages))
            return ModelReply(content=self.summarize(messages), token_usage=TokenUsage(100, 20))
        return super().generate(messages, stop_sequences, tools, **kwargs)


@pytest.fixture
def secret() -> bytes:
    return SECRET
