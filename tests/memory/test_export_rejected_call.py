"""A tool call the person rejected exports as the chat shows it: their rejection with the reason, not a result or a
failure (issue 19: a rejection shows its reason, not an error)."""
from __future__ import annotations

from agents import AgentMemory
from agents.memory import ActionStep, TaskStep
from agents.memory.export import to_markdown


def test_a_rejected_tool_call_exports_as_the_persons_rejection() -> None:
    memory = AgentMemory("system")
    memory.add_step(TaskStep(task="Search", steps_before=0))
    rejected = {"call_id": "c1", "name": "web_search", "arguments": {"query": "penguins"}, "finished": True,
                "rejected": True, "output": "no web searches today"}
    legacy = {**rejected, "call_id": "c2", "rejected": False, "is_error": True,
              "output": "Rejected by the user: not now"}
    memory.add_step(ActionStep(step_number=1, code="web_search('penguins')", call_records=[rejected, legacy],
                               error="ToolCallError: tool 'web_search' failed: Rejected: …"))
    text = to_markdown(memory)
    assert "🚫 You rejected the call to `web_search`. Reason: no web searches today" in text
    assert "🚫 You rejected the call to `web_search`. Reason: not now" in text
    assert "failed" not in text and "Result:" not in text


def test_the_heading_shows_a_chat_title_as_plain_text() -> None:
    """A title is the person's plain text (the side list escapes it): markup in it is not rendered by the export."""
    text = to_markdown(AgentMemory(system_prompt="s"), title="Sum <b>bold</b>\n# chat")
    assert text.splitlines()[0] == "# Sum &lt;b&gt;bold&lt;/b&gt; # chat"
