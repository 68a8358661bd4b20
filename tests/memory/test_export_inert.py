"""Both exports are inert documents: markup written by the agent, the person, the sandbox's code (file names,
tool names, error types) or a chat's title renders as text, and the only links are our own file links.

A hostile corpus goes through every field the exports quote; the Markdown (and every markdown cell of the
notebook) is rendered by a real CommonMark renderer with raw HTML on and link checks off (the most permissive
viewer), and the HTML it makes is read by an HTML parser: no element or attribute outside plain formatting."""
from __future__ import annotations

import json
from typing import Any

import nbformat
import pytest
from bs4 import BeautifulSoup
from markdown_it import MarkdownIt

from agents.memory import ActionStep, AgentMemory, FinalAnswerStep, TaskStep
from agents.memory.export import to_markdown
from agents.memory.export_notebook import to_notebook
from agents.memory.inert_markdown import block, code_span, fenced, file_link, prose
from agents.memory.steps import HistoryStep, PlanningStep, SummaryStep

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    "<iframe src=javascript:alert(3)></iframe>",
    "<svg onload=alert(4)>",
    "<a href=javascript:alert(5)>x</a>",
    "[click](javascript:alert(6))",
    "![pic](javascript:alert(7))",
    "<javascript:alert(8)>",
    "[ref]\n\n[ref]: javascript:alert(9)",
    "&lt;script&gt;alert(10)&lt;/script&gt;",
    "\\<script>alert(11)</script>",
    "`` ` ``<img src=x onerror=alert(12)>",
    "\\`[esc](javascript:alert(13))`",
    "foo `bar\n` [split](javascript:alert(14)) `",
    "```\n<script>alert(15)</script>",  # an unclosed fence: it would swallow what follows
    "````\n```\n<script>alert(16)</script>\n````",
    "~~~\n<img src=x onerror=alert(17)>",
    "- item\n\n  ```\n<script>alert(18)</script>\n  ```",  # a fence whose lines fall out of a list item
    "    <script>alert(19)</script>",
    "> ```\n> <script>alert(20)</script>",
    "<!-- comment\n\n<script>alert(21)</script> -->",
    "```python onerror=alert(22)\nx = 1\n```",
]
EVIL = " ".join(HOSTILE)
#: A fence breaker for code and output: a run of backticks longer than ours, then markup.
BREAKER = "```\n````\n</pre><script>alert(30)</script>\n`````\n"
ALLOWED_TAGS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "code", "pre", "a", "img", "ul", "ol",
                "li", "blockquote", "hr", "br", "table", "thead", "tbody", "tr", "th", "td"}


def hostile_memory() -> tuple[AgentMemory, list[dict[str, Any]]]:
    memory = AgentMemory("system")
    memory.add_step(HistoryStep(history=[{"role": "<b onmouseover=alert(40)>user", "content": EVIL},
                                         {"role": "assistant", "content": [{"type": "text", "text": EVIL}]}]))
    memory.add_step(TaskStep(task="the task", run_id="r1"))
    memory.add_step(PlanningStep(step_number=1, plan=EVIL, decisions=[
        {"kind": "plan", "outcome": "<i onclick=alert(41)>reject", "detail": EVIL},
        {"kind": "plan", "outcome": "edit", "detail": "", "proposed": {"plan": EVIL}}]))
    calls = [{"call_id": "c1", "name": "web`<img src=x onerror=alert(42)>`", "arguments": {"q": EVIL + BREAKER},
              "output": EVIL + BREAKER, "is_error": True, "finished": True},
             {"call_id": "c2", "name": "ask_user\n\n<script>alert(43)</script>", "arguments": {"question": EVIL},
              "output": EVIL, "rejected": True, "finished": True}]
    decisions = [{"kind": "code", "outcome": "edit", "detail": EVIL, "proposed": {"code": BREAKER + EVIL}},
                 {"kind": "question", "outcome": "answer", "detail": EVIL, "proposed": {"question": EVIL}},
                 {"kind": "question", "outcome": "timeout", "detail": EVIL, "proposed": {"question": EVIL}},
                 {"kind": "tool_call", "outcome": "edit", "edited": {"q": EVIL},
                  "proposed": {"call_id": "c1", "arguments": {"q": BREAKER}}}]
    artifacts = ["x)<img src=x onerror=alert(44)>.png", "javascript:alert(45).png", "a](javascript:alert(46)).csv",
                 "../../etc/passwd.txt", "plots/chart one.png", "note.svg", "report.html", "data.csv"]
    memory.add_step(ActionStep(step_number=2, run_id="r1", model_output=EVIL + "\n```python\nx\n```",
                               code="print('''" + BREAKER + EVIL + "''')", logs=BREAKER + EVIL,
                               call_records=calls, decisions=decisions, artifacts=artifacts))
    memory.add_step(ActionStep(step_number=3, run_id="r1", model_output=EVIL, code="1/0",
                               error="ZeroDivisionError: " + EVIL, error_type="<img src=x onerror=alert(47)>",
                               error_message=EVIL + BREAKER))
    memory.add_step(ActionStep(step_number=4, run_id="r1", model_output="x", code="x", error="Rejected.",
                               error_type="RejectedByUser", error_message=EVIL))
    memory.add_step(SummaryStep(summary=EVIL, folded_steps=2))
    frame = ("   name                          value\n0  <script>alert(48)</script>       1\n"
             "1  [t](javascript:alert(49))       2")
    memory.add_step(FinalAnswerStep(output=EVIL + "\n\n" + frame, run_id="r1"))
    memory.add_step(TaskStep(task="second", run_id="r2"))
    memory.add_step(FinalAnswerStep(output={"<script>": "alert(50)"}, run_id="r2"))
    turns = [{"task": "the task", "text": EVIL, "uploads": [{"name": "<img src=x onerror=alert(51)>.csv"},
                                                             {"name": "`` <script>alert(52)</script>"}]}]
    return memory, turns


def render(markdown: str) -> BeautifulSoup:
    """HTML as the most permissive CommonMark viewer makes it: raw HTML on, any link scheme let through."""
    renderer = MarkdownIt("commonmark").enable("table")
    renderer.validateLink = lambda url: True
    return BeautifulSoup(renderer.render(markdown), "html.parser")


def assert_inert(markdown: str, links: set[str]) -> BeautifulSoup:
    soup = render(markdown)
    for element in soup.find_all(True):
        assert element.name in ALLOWED_TAGS, f"<{element.name}> rendered from the export: {element}"
        for name, value in element.attrs.items():
            assert not name.lower().startswith("on"), f"{name} on <{element.name}>"
            if name in ("href", "src"):
                assert value in links, f"{name}={value!r}: not one of our own file links"
            elif name == "class":
                assert all(c.startswith("language-") and c.replace("-", "").replace("_", "").isalnum()
                           for c in value), value
            elif name == "style":
                assert element.name in ("th", "td") and value.startswith("text-align:"), value
            else:
                assert name == "alt" and element.name == "img", f"{name} on <{element.name}>"
    return soup


#: The plainly named files among the artifacts: linked (an SVG as a link, not an image: some viewers run its script).
OUR_LINKS = {"plots/chart%20one.png", "data.csv", "note.svg", "report.html"}


def test_the_markdown_export_renders_every_hostile_text_as_text() -> None:
    memory, turns = hostile_memory()
    markdown = to_markdown(memory, title="<script>alert(60)</script> [t](javascript:alert(61))", turns=turns)
    soup = assert_inert(markdown, OUR_LINKS)
    shown = soup.get_text()
    # Nothing is dropped: the hostile text is on the page, as text.
    for marker in ("<script>alert(1)</script>", "<img src=x onerror=alert(2)>", "[click](javascript:alert(6))",
                   "<script>alert(15)</script>", "alert(43)", "alert(44)", "alert(47)", "alert(51)", "alert(60)"):
        assert marker in shown, marker
    # Our own links are there, to plainly named files only; the others are shown as names.
    assert {a["href"] for a in soup.find_all("a")} == {"data.csv", "note.svg", "report.html"}
    assert {i["src"] for i in soup.find_all("img")} == {"plots/chart%20one.png"}
    # The code that ran and its output stay code, whole, however many backticks they hold.
    pres = [pre.get_text() for pre in soup.find_all("pre")]
    assert any(BREAKER + EVIL in text for text in pres if text.startswith("print('''"))
    assert any(text.startswith(BREAKER) for text in pres)


def test_every_notebook_cell_and_its_metadata_is_inert() -> None:
    memory, turns = hostile_memory()
    title = "<img src=x onerror=alert(70)>\n```\n<script>alert(71)</script>"
    notebook = to_notebook(memory, title=title, turns=turns)
    nbformat.validate(notebook)
    assert "alert(70)" in render(notebook.cells[0].source).get_text()
    for cell in notebook.cells:
        assert "attachments" not in cell
        if cell.cell_type == "markdown":
            assert_inert(cell.source, OUR_LINKS)
        for output in cell.get("outputs", []):
            assert output.output_type in ("stream", "display_data")
            assert set(output.get("data", {})) <= {"image/png", "text/plain"}  # no HTML, SVG or script output
        assert "alert" not in json.dumps(cell.metadata)
    assert "alert" not in json.dumps(notebook.metadata)


@pytest.mark.parametrize("text", HOSTILE + [BREAKER, EVIL])
def test_each_piece_is_inert_alone_and_after_any_other(text: str) -> None:
    """The rule holds for a text however the export places it: alone, after any other quoted text, and inside
    our own code fence that follows it."""
    for before in [""] + HOSTILE:
        pieces = [block(before), block(text), prose(text), code_span(text), file_link(text), fenced(text, "text")]
        assert_inert("\n\n".join(pieces), set())


def test_a_figure_swapped_for_a_link_while_exporting_never_reaches_the_notebook(tmp_path) -> None:
    """Attack: the worker may run while the person exports. A process swapping `chart.png` between a PNG in the
    workspace and a link to one of the app's files raced the export's check (resolve) against its open by name:
    the notebook carried the app's file, base64 in an output cell."""
    from agents.memory.export_notebook import MAX_IMAGE_BYTES, _read_image
    from tests.link_swapping import swapping

    workspace, elsewhere = tmp_path / "ws", tmp_path / "app"
    workspace.mkdir()
    elsewhere.mkdir()
    secret = elsewhere / "secret.png"
    secret.write_bytes(b"APP-SECRET-" * 10)
    (workspace / "plain.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"A" * 64)
    leaked = 0
    with swapping(workspace, "chart.png", workspace / "plain.png", secret):
        for _ in range(2000):
            image = _read_image(workspace, "chart.png", [MAX_IMAGE_BYTES])
            leaked += int(isinstance(image, str) and "QVBQLVNFQ1JFVC" in image)  # base64 of "APP-SECRET"
    assert leaked == 0, f"the export read the app's file {leaked} times in 2000 tries"
