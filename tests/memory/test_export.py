"""Export to Markdown and Jupyter, and rebuilding the sandbox from a loaded memory."""
from __future__ import annotations

import nbformat
import pytest

from agents import AgentMemory, tool
from agents.loop.restore import rebuild_sandbox_state
from agents.memory import ActionStep, FinalAnswerStep, TaskStep
from agents.memory.export import to_markdown
from agents.memory.export_notebook import save_notebook, to_notebook
from agents.models.base import ToolCall
from tests.agents.conftest import code
from tests.memory.conftest import needs_sandbox

CSV = "city,temp\nLisbon,21\nOslo,4\nCairo,30\n"


@tool
def double(x: int) -> int:
    """Double a number.

    Args:
        x: The number.
    """
    return 2 * x


def _analysis_run(make_code_agent, tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "temps.csv").write_text(CSV)
    agent, _ = make_code_agent([
        code("import pandas as pd\ndf = pd.read_csv('temps.csv')\nprint(df.temp.mean())"),
        code("undefined_thing + 1", thought="Oops."),
        code("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
             "plt.bar(df.city, df.temp)\nplt.savefig('temps.png')\nprint('saved')"),
        code("hottest = df.loc[df.temp.idxmax(), 'city']\nprint(hottest)\nfinal_answer(hottest)"),
    ], authorized_imports=["pandas", "matplotlib"], workdir=workspace)
    assert agent.run("Which city is hottest in temps.csv? Plot the temperatures.") == "Cairo"
    return agent, workspace


@needs_sandbox
@pytest.mark.slow
def test_notebook_validates_and_reexecutes(make_code_agent, tmp_path):
    from nbclient import NotebookClient

    agent, workspace = _analysis_run(make_code_agent, tmp_path)
    path = save_notebook(agent.memory, tmp_path / "analysis.ipynb", workspace=workspace)
    notebook = nbformat.read(str(path), as_version=4)
    nbformat.validate(notebook)
    code_cells = [c for c in notebook.cells if c.cell_type == "code"]
    assert [c.source.splitlines()[0] for c in code_cells[1:]] == [
        "import pandas as pd", "import matplotlib", "hottest = df.loc[df.temp.idxmax(), 'city']"]
    assert code_cells[1].outputs[0]["text"] == "18.333333333333332\n"
    assert any("image/png" in o.get("data", {}) for o in code_cells[2].outputs)
    markdown = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    assert "Which city is hottest" in markdown and "## Final answer\n\nCairo" in markdown
    assert "undefined_thing" in markdown and "failed" in markdown  # the failed step is shown, not run
    NotebookClient(notebook, timeout=60, kernel_name="python3",
                   resources={"metadata": {"path": str(workspace)}}).execute()
    rerun = [c for c in notebook.cells if c.cell_type == "code"]
    assert rerun[1].outputs[0]["text"].strip() == "18.333333333333332"
    assert any(o.get("output_type") == "error" for c in rerun for o in c.get("outputs", [])) is False
    assert "Cairo" in str(rerun[-1].outputs)


@needs_sandbox
def test_markdown_export(make_code_agent, tmp_path):
    agent, _ = _analysis_run(make_code_agent, tmp_path)
    text = to_markdown(agent.memory)
    assert "## Task\n\nWhich city is hottest in temps.csv?" in text
    assert "```python\nimport pandas as pd\ndf = pd.read_csv('temps.csv')" in text
    assert "NameError" in text and "![temps.png](temps.png)" in text
    assert text.rstrip().endswith("## Final answer\n\nCairo")


def test_exports_from_a_constructed_memory(tmp_path):
    memory = AgentMemory("system")
    memory.add_step(TaskStep(task="Add numbers", messages=[{"role": "user", "content": "Add numbers"}]))
    memory.add_step(ActionStep(step_number=1, code="x = 1 + 1\nprint(x)", logs="2\n", model_output="Thought: add."))
    memory.add_step(ActionStep(step_number=2, code="y = double(x)\nprint(y)", logs="4\n",
                               tool_calls=[ToolCall("double", {"x": 2})]))
    memory.add_step(FinalAnswerStep(output={"answer": 4}))
    notebook = to_notebook(memory)
    nbformat.validate(notebook)
    cells = notebook.cells
    assert "def double(" in cells[1].source and "def final_answer(" in cells[1].source
    tool_cell = next(c for c in cells if c.cell_type == "code" and "double(x)" in c.source)
    assert tool_cell.metadata["tags"] == ["raises-exception"]
    text = to_markdown(memory)
    assert "```python\nx = 1 + 1\nprint(x)\n```" in text and "{'answer': 4}" in text


@needs_sandbox
def test_rebuild_sandbox_state_reports_mismatches(make_code_agent, tmp_path):
    agent, model = make_code_agent([
        code("import random\ntotal = 40 + 2\nprint(total)"),
        code("print(double(total))"),
        code("broken(", thought="Typo."),
        code("print(random.random())"),
        code("final_answer(total)"),
    ], tools=[double])
    assert agent.run("t") == 42
    fresh, _ = make_code_agent([code("final_answer(total + 1)")], tools=[double])
    report = rebuild_sandbox_state(agent.memory, fresh)
    assert report.rerun == [1, 4, 5]
    assert report.skipped == [(2, "called tools: double"), (3, "errored originally")]
    assert [m.step_number for m in report.mismatches] == [4]  # a new random number
    assert "step 4" in report.summary()
    # The rebuilt state is usable by a follow-up run on the loaded memory.
    fresh.memory = agent.memory
    assert fresh.run("and plus one?", reset=False) == 43
    with_tools = rebuild_sandbox_state(agent.memory, make_code_agent([], tools=[double])[0], rerun_tools=True)
    assert 2 in with_tools.rerun and not any(m.step_number == 2 for m in with_tools.mismatches)


def test_markdown_of_a_constructed_memory_says_what_the_chat_said() -> None:
    """Numbers within each run, the person's message from the app's turns, a rejection's reason, a traceback
    named by the chat's step number, a data frame object as a table."""
    import pandas as pd

    from agents.memory.export import renumber_traceback

    memory = AgentMemory("system")
    memory.add_step(TaskStep(task="Hi\n\nThe following files were uploaded…", steps_before=0))
    memory.add_step(ActionStep(step_number=1, code="rm()", error="The user rejected this action…",
                               error_type="RejectedByUser", error_message="Rejected."))
    memory.add_step(FinalAnswerStep(output="ok"))
    memory.add_step(TaskStep(task="Again", steps_before=1))
    trace = 'Traceback:\n  File "<step 9>", line 1, in <module>\n  File "<step 4>", line 2, in f\nValueError: no'
    memory.add_step(ActionStep(step_number=2, code="f()", error=trace + "\nNow fix it.", error_type="ExecutionError",
                               error_message=trace))
    memory.add_step(FinalAnswerStep(output=pd.DataFrame({"a": [1, 2]})))
    turns = [{"task": "Hi\n\nThe following files were uploaded…", "text": "Hi", "uploads": [{"name": "a.csv"}]}]
    text = to_markdown(memory, turns=turns)
    assert "## Task\n\nHi\n\n📎 Added to the workspace: `a.csv`\n\n### Step 1" in text
    assert "uploaded" not in text and "## Task\n\nAgain\n\n### Step 1" in text  # no turn: the task is the message
    assert "🚫 You rejected this step. No reason given." in text and "The user rejected this action" not in text
    assert 'File "<step 1>", line 1' in text and 'File "<an earlier step>", line 2' in text and "fix it" not in text
    assert text.rstrip().endswith("## Final answer\n\n|   | a |\n| :--- | ---: |\n| 0 | 1 |\n| 1 | 2 |")
    assert text.count("### Step 1") == 2
    assert renumber_traceback("no frames here", 3) == "no frames here"


def test_a_notebook_embeds_images_within_a_budget(tmp_path, monkeypatch):
    """Artifacts are read whole and base64'd in the app's process: a huge "chart" listed by step after step
    (code can rewrite one each step) must not cost the app gigabytes per export."""
    from agents.memory import export_notebook as export

    monkeypatch.setattr(export, "MAX_IMAGE_BYTES", 64 << 10)  # the same rule at a test's scale
    monkeypatch.setattr(export, "MAX_NOTEBOOK_IMAGE_BYTES", 512 << 10)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    png = b"\x89PNG\r\n\x1a\n"
    (workspace / "small.png").write_bytes(png + b"\0" * 1000)
    (workspace / "huge.png").write_bytes(png + b"\0" * (export.MAX_IMAGE_BYTES + 1))
    (workspace / "big.png").write_bytes(png + b"\0" * (export.MAX_IMAGE_BYTES - 100))
    memory = AgentMemory("system")
    memory.add_step(TaskStep(task="Plot", messages=[{"role": "user", "content": "Plot"}]))
    for number in range(1, 21):
        memory.add_step(ActionStep(step_number=number, code="plot()", logs="", model_output="Thought: plot.",
                                   artifacts=["small.png", "huge.png", "big.png"]))
    notebook = to_notebook(memory, workspace)
    nbformat.validate(notebook)
    embedded = [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])
                if o.get("output_type") == "display_data"]
    total = sum(len(o["data"]["image/png"]) for o in embedded) * 3 // 4
    assert total <= export.MAX_NOTEBOOK_IMAGE_BYTES
    assert any(o["data"]["text/plain"] == "<small.png>" for o in embedded)
    assert not any(o["data"]["text/plain"] == "<huge.png>" for o in embedded)
    text = nbformat.writes(notebook)
    assert "huge.png is not embedded" in text and "big.png is not embedded" in text  # the budget ran out


def test_a_last_expression_exports_as_the_chat_showed_it():
    """Issue 31: a step's bare last expression (`summary`) was missing from the exports."""
    memory = AgentMemory("system")
    memory.add_step(TaskStep(task="Summarise", messages=[{"role": "user", "content": "Summarise"}]))
    table = {"columns": ["", "city", "rain"], "rows": [["0", "Oslo", 7.5], ["1", "Ro|me", None]], "shape": [40, 2]}
    shown = {"type": "DataFrame", "text": "   city  rain\n0  Oslo   7.5", "table": table}
    memory.add_step(ActionStep(step_number=1, code="summary", run_id="r", last_value=shown))
    memory.add_step(ActionStep(step_number=2, code="total", run_id="r", last_value={"type": "int", "text": "42"}))
    text = to_markdown(memory)
    assert "Out [step 1]: DataFrame (First 2 of 40 rows, 2 of 2 columns.)" in text
    assert "| 0 | Oslo | 7.5 |" in text
    assert "Ro\\|me" in text  # a cell's pipe cannot break the table
    assert "Out [step 2]: int\n\n```text\n42\n```" in text
    notebook = to_notebook(memory)
    nbformat.validate(notebook)
    [first] = [c for c in notebook.cells if c.cell_type == "code" and c.source == "summary"]
    [result] = [o for o in first.outputs if o.output_type == "execute_result"]
    assert result.data["text/plain"].startswith("   city  rain") and "| Oslo |" in result.data["text/markdown"]
