"""The line under the approval mode selector says what the mode pauses for, naming the chosen tools it covers
(by the policy's own rule, so the list and the pauses cannot disagree)."""
from __future__ import annotations

from agents import tool
from tools.visit_webpage import VisitWebpageTool
from tools.web_search import WebSearchTool
from ui.panels.approval_panel import mode_coverage


@tool
def word_count(text: str) -> int:
    """Count words.

    Args:
        text: The text.
    """
    return len(text.split())


def test_approve_tools_names_the_tools_that_reach_outside_and_why() -> None:
    line = mode_coverage("approve_tools", [WebSearchTool(), VisitWebpageTool(), word_count])
    assert line.startswith("Pauses before each call to **web_search** (sends the query to DuckDuckGo), "
                           "**visit_webpage** (fetches a web page the agent chose).")
    assert "word_count" not in line and "Other tools run without asking." in line


def test_a_mode_that_would_never_pause_says_so() -> None:
    line = mode_coverage("approve_tools", [word_count])
    assert line.startswith("⚠️ None of the chosen tools needs approval, so this mode never pauses")


def test_every_mode_says_what_it_pauses_for() -> None:
    tools = [WebSearchTool(), word_count]
    assert mode_coverage("autonomous", tools) == "" and mode_coverage("not a mode", tools) == ""
    assert mode_coverage("review_plans", tools) == "Pauses after each plan."
    assert mode_coverage("approve_code", tools) == "Pauses before each code step."
    everything = mode_coverage("all", tools)
    assert everything.startswith("Pauses after each plan, before each code step, before each call to **web_search**")
    assert "**word_count**" in everything and "Other tools" not in everything
