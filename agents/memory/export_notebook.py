"""Export a conversation as a Jupyter notebook (nbformat v4) to rerun outside AgentDeck.

It says what the chat said, as the Markdown export does (agents/memory/export.py), whose sections its markdown
cells are.

Notebook layout: a markdown cell per task, history, plan and summary; a setup cell defining
`final_answer` (it displays the answer) and stubs for the tools the code called (they raise, saying the
tool only exists inside AgentDeck); one code cell per successful code step, in order, with its printed output
as a stream output and its PNG artifacts (read from the workspace) as `display_data` outputs; final
answers as markdown cells (their text written by the Markdown export's rule: agents/memory/inert_markdown.py).
Code steps that failed become markdown cells (code and error), so the notebook
runs from top to bottom; cells that call tools are tagged `raises-exception` (nbclient and Jupyter then
carry on past them). Run it with the workspace as the working directory so relative file paths resolve.
"""
from __future__ import annotations

import base64
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.executor.backend import FileTooLarge
from agents.executor.local import workspace_files
from agents.memory.export import (
    answer_markdown,
    error_markdown,
    history_markdown,
    plan_markdown,
    step_numbers,
    task_markdown,
    value_markdown,
)
from agents.memory.inert_markdown import block, fenced, inline
from agents.memory.memory import AgentMemory
from agents.memory.seen_text import as_seen, relative_paths
from agents.memory.steps import ActionStep, FinalAnswerStep, HistoryStep, PlanningStep, SummaryStep, TaskStep
from agents.shown_value import ShownValue

if TYPE_CHECKING:
    from nbformat import NotebookNode

_IMAGE_SUFFIXES = {".png"}
#: Images a notebook embeds, each and in all. Why: a step's artifacts are read whole into memory and base64'd;
#: code can write a 100 MB "chart" and list it in step after step, and the app builds exports in its own process.
MAX_IMAGE_BYTES = 8 << 20
MAX_NOTEBOOK_IMAGE_BYTES = 48 << 20
_TOO_BIG = object()
_SETUP = '''# Set up by AgentDeck: in the agent, final_answer() ended the task; here it shows the answer.
def final_answer(answer=None):
    from IPython.display import display
    display(answer)
    return answer
'''


def _tool_names(memory: AgentMemory) -> list[str]:
    names = {call.name for step in memory.action_steps() for call in step.tool_calls if step.code}
    return sorted(names - {"final_answer"})


def _tool_stub(name: str) -> str:
    return (f"def {name}(*args, **kwargs):\n"
            f"    raise NotImplementedError(\"The tool {name!s} is only available inside AgentDeck; \"\n"
            f"                              \"the output it gave is shown under the cell.\")\n")


def to_notebook(memory: AgentMemory, workspace: str | os.PathLike[str] | None = None,
                title: str = "AgentDeck conversation", turns: Sequence[dict[str, Any]] = (),
                read_file: Callable[[str, int], bytes] | None = None) -> NotebookNode:
    """A nbformat v4 notebook of the conversation; `workspace` is where artifact files are read from, `turns`
    the person's messages (as in `to_markdown`). `read_file(relative, max_bytes)`: how an artifact is read
    (an app whose sandbox keeps the workspace elsewhere reads through it; by default by descriptor below
    `workspace`), with the refusals of `workspace_files.read`."""
    import nbformat
    from nbformat import v4

    root = Path(workspace) if workspace is not None else None
    budget = [MAX_NOTEBOOK_IMAGE_BYTES]  # what images may still add, shared by every step

    def seen(text: str) -> str:
        return as_seen(text, [workspace])

    cells = [v4.new_markdown_cell(f"# {inline(title)}\n\nExported from AgentDeck. Run it with the agent's workspace as "
                                  "the working directory.")]
    tools = _tool_names(memory)
    setup = _SETUP + "".join("\n\n" + _tool_stub(name) for name in tools if name.isidentifier())
    cells.append(v4.new_code_cell(setup, metadata={"tags": ["agentdeck-setup"]}))
    pending = [dict(turn) for turn in turns if isinstance(turn, dict)]
    numbers = step_numbers(memory.steps)
    for index, step in enumerate(memory.steps):
        if isinstance(step, HistoryStep):
            cells.append(v4.new_markdown_cell(history_markdown(step, seen)))
        elif isinstance(step, TaskStep):
            cells.append(v4.new_markdown_cell(task_markdown(step, pending, seen)))
        elif isinstance(step, PlanningStep):
            cells.append(v4.new_markdown_cell(plan_markdown(step, seen)))
        elif isinstance(step, SummaryStep):
            cells.append(v4.new_markdown_cell(f"### Summary of {step.folded_steps} earlier steps\n\n"
                                              + block(seen(step.summary))))
        elif isinstance(step, ActionStep) and step.code:
            number = numbers.get(index, step.step_number)
            if step.error:
                error = error_markdown(step, number, seen) or "Error:\n\n" + fenced(seen(step.error), "text")
                cells.append(v4.new_markdown_cell(
                    f"### Step {number} (failed, not run here)\n\n"
                    + fenced(relative_paths(step.code, [workspace]), "python") + "\n\n" + error))
                continue
            outputs = []
            if step.logs:
                outputs.append(v4.new_output("stream", name="stdout", text=seen(step.logs)))
            value = ShownValue.from_data(step.last_value)
            if value is not None:  # the last expression, as the notebook would show it: text, and a frame's table
                data = {"text/plain": seen(value.text)}
                shown = value_markdown(step, number, seen)
                if value.is_table and shown:
                    data["text/markdown"] = shown
                outputs.append(v4.new_output("execute_result", data=data, execution_count=None))
            for artifact in step.artifacts:
                image = _read_image(root, artifact, budget, read_file)
                if isinstance(image, str):
                    data = {"image/png": image, "text/plain": f"<{artifact}>"}
                    outputs.append(v4.new_output("display_data", data=data))
                elif image is _TOO_BIG:
                    outputs.append(v4.new_output("stream", name="stdout", text=(
                        f"[{artifact} is not embedded: the notebook holds images up to {MAX_IMAGE_BYTES >> 20} MB "
                        f"each and {MAX_NOTEBOOK_IMAGE_BYTES >> 20} MB in all; it is in the workspace.]\n")))
            metadata: dict[str, Any] = {"agentdeck": {"step_number": step.step_number}}
            if step.tool_calls and any(c.name != "final_answer" for c in step.tool_calls):
                metadata["tags"] = ["raises-exception"]
            cell = v4.new_code_cell(relative_paths(step.code, [workspace]), outputs=outputs, metadata=metadata)
            cells.append(cell)
        elif isinstance(step, FinalAnswerStep):
            answer = answer_markdown(step.output, seen, step.answer_value)
            cells.append(v4.new_markdown_cell("## Final answer\n\n" + answer))
    notebook: NotebookNode = v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "agentdeck": {"steps": len(memory.steps)},
    })
    nbformat.validate(notebook)
    return notebook


def _read_image(root: Path | None, artifact: str, budget: list[int],
                read_file: Callable[[str, int], bytes] | None = None) -> str | object | None:
    """The base64 PNG of a workspace artifact; None (not a PNG, outside the workspace, or missing), or _TOO_BIG
    when it is over MAX_IMAGE_BYTES or the notebook's remaining `budget` (which it then uses up)."""
    if root is None or Path(artifact).suffix.lower() not in _IMAGE_SUFFIXES:
        return None
    # Read by descriptor below the workspace (no link at any step, a regular file, opening never waits): the
    # worker may be running while the person exports, and a path resolved, checked and then opened by name could
    # be swapped for a link in between (the notebook then carried any file of the app's it named).
    try:
        cap = min(MAX_IMAGE_BYTES, budget[0])
        data = read_file(artifact, cap) if read_file is not None else workspace_files.read(str(root), artifact, cap)
    except FileTooLarge:
        return _TOO_BIG
    except OSError:
        return None
    budget[0] -= len(data)
    return base64.b64encode(data).decode("ascii")


def save_notebook(memory: AgentMemory, path: str | os.PathLike[str], workspace: str | os.PathLike[str] | None = None,
                  **kwargs: Any) -> Path:
    import nbformat

    target = Path(path)
    nbformat.write(to_notebook(memory, workspace, **kwargs), str(target))
    return target
