"""Export a conversation as Markdown or as a Jupyter notebook (nbformat v4) to rerun outside AgentDeck.

Notebook layout: a markdown cell per task, history, plan and summary; a setup cell defining
`final_answer` (it displays the answer) and stubs for the tools the code called (they raise, saying the
tool only exists inside AgentDeck); one code cell per successful code step, in order, with its printed output
as a stream output and its PNG artifacts (read from the workspace) as `display_data` outputs; final
answers as markdown cells. Code steps that failed become markdown cells (code and error), so the notebook
runs from top to bottom; cells that call tools are tagged `raises-exception` (nbclient and Jupyter then
carry on past them). Run it with the workspace as the working directory so relative file paths resolve.
"""
from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.memory.memory import AgentMemory
from agents.memory.seen_text import as_seen, relative_paths
from agents.memory.steps import (
    ActionStep,
    FinalAnswerStep,
    HistoryStep,
    PlanningStep,
    SummaryStep,
    TaskStep,
)
from agents.models.base import message_text

if TYPE_CHECKING:
    from nbformat import NotebookNode

_IMAGE_SUFFIXES = {".png"}
EDITED_NOTE = "*✏️ Edited by you before it ran: shown as it ran.*"


def _answer_text(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def _fenced(text: str, language: str = "") -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"


def _tool_names(memory: AgentMemory) -> list[str]:
    names = {call.name for step in memory.action_steps() for call in step.tool_calls if step.code}
    return sorted(names - {"final_answer"})


# -- Markdown ----------------------------------------------------------------------------------------
def to_markdown(memory: AgentMemory, title: str = "AgentDeck conversation",
                workspace: str | os.PathLike[str] | None = None) -> str:
    """The conversation as Markdown: tasks, plans, each step's code, output and errors, artifacts, answers.

    It shows what the person saw: no prompt fences, and paths relative to `workspace` (agents/memory/seen_text.py).
    """
    def seen(text: str) -> str:
        return as_seen(text, [workspace])

    parts: list[str] = [f"# {title}"]
    for step in memory.steps:
        if isinstance(step, HistoryStep):
            lines = [f"**{m.get('role', 'user')}:** {seen(message_text(m))}" for m in step.history]
            parts.append("## Earlier conversation\n\n" + "\n\n".join(lines))
        elif isinstance(step, TaskStep):
            parts.append("## Task\n\n" + seen(step.task))
        elif isinstance(step, PlanningStep):
            edited = ", edited by you" if step.edited_by_user else ""
            parts.append(f"### Plan (step {step.step_number}{edited})\n\n" + seen(step.plan))
        elif isinstance(step, SummaryStep):
            parts.append(f"### Summary of {step.folded_steps} earlier steps (compaction)\n\n" + seen(step.summary))
        elif isinstance(step, ActionStep):
            section = [f"### Step {step.step_number}"]
            thought = step.model_output.split("```")[0].strip() if step.code else step.model_output.strip()
            if thought:
                section.append(seen(thought))
            if step.edited_by_user:  # what follows is what ran: the person's version
                section.append(EDITED_NOTE)
            if step.code:
                section.append(_fenced(relative_paths(step.code, [workspace]), "python"))
            for call in step.tool_calls if not step.code else ():
                section.append(f"Tool call `{call.name}`: " + _fenced(seen(repr(call.arguments)), "python"))
            if step.logs:
                section.append("Output:\n\n" + _fenced(seen(step.logs), "text"))
            elif step.observations and not step.code:
                section.append("Observation:\n\n" + _fenced(seen(step.observations), "text"))
            if step.error:
                section.append("Error:\n\n" + _fenced(seen(step.error), "text"))
            for artifact in step.artifacts:
                shown = seen(artifact)
                if Path(artifact).suffix.lower() in (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp"):
                    section.append(f"![{shown}]({shown})")
                else:
                    section.append(f"File: [{shown}]({shown})")
            parts.append("\n\n".join(section))
        elif isinstance(step, FinalAnswerStep):
            parts.append("## Final answer\n\n" + seen(_answer_text(step.output)))
    return "\n\n".join(parts) + "\n"


# -- Notebook ----------------------------------------------------------------------------------------
_SETUP = '''# Set up by AgentDeck: in the agent, final_answer() ended the task; here it shows the answer.
def final_answer(answer=None):
    from IPython.display import display
    display(answer)
    return answer
'''


def _tool_stub(name: str) -> str:
    return (f"def {name}(*args, **kwargs):\n"
            f"    raise NotImplementedError(\"The tool {name!s} is only available inside AgentDeck; \"\n"
            f"                              \"the output it gave is shown under the cell.\")\n")


def to_notebook(memory: AgentMemory, workspace: str | os.PathLike[str] | None = None,
                title: str = "AgentDeck conversation") -> NotebookNode:
    """A nbformat v4 notebook of the conversation; `workspace` is where artifact files are read from."""
    import nbformat
    from nbformat import v4

    root = Path(workspace) if workspace is not None else None

    def seen(text: str) -> str:
        return as_seen(text, [workspace])

    cells = [v4.new_markdown_cell(f"# {title}\n\nExported from AgentDeck. Run it with the agent's workspace as the "
                                  "working directory.")]
    tools = _tool_names(memory)
    setup = _SETUP + "".join("\n\n" + _tool_stub(name) for name in tools if name.isidentifier())
    cells.append(v4.new_code_cell(setup, metadata={"tags": ["agentdeck-setup"]}))
    for step in memory.steps:
        if isinstance(step, HistoryStep):
            lines = [f"**{m.get('role', 'user')}:** {seen(message_text(m))}" for m in step.history]
            cells.append(v4.new_markdown_cell("## Earlier conversation\n\n" + "\n\n".join(lines)))
        elif isinstance(step, TaskStep):
            cells.append(v4.new_markdown_cell("## Task\n\n" + seen(step.task)))
        elif isinstance(step, PlanningStep):
            cells.append(v4.new_markdown_cell("### Plan\n\n" + seen(step.plan)))
        elif isinstance(step, SummaryStep):
            cells.append(v4.new_markdown_cell(f"### Summary of {step.folded_steps} earlier steps\n\n"
                                              + seen(step.summary)))
        elif isinstance(step, ActionStep) and step.code:
            if step.error:
                cells.append(v4.new_markdown_cell(
                    f"### Step {step.step_number} (failed, not run here)\n\n"
                    + _fenced(relative_paths(step.code, [workspace]), "python")
                    + "\n\nError:\n\n" + _fenced(seen(step.error), "text")))
                continue
            outputs = []
            if step.logs:
                outputs.append(v4.new_output("stream", name="stdout", text=seen(step.logs)))
            for artifact in step.artifacts:
                image = _read_image(root, artifact)
                if image is not None:
                    data = {"image/png": image, "text/plain": f"<{artifact}>"}
                    outputs.append(v4.new_output("display_data", data=data))
            metadata: dict[str, Any] = {"agentdeck": {"step_number": step.step_number}}
            if step.tool_calls and any(c.name != "final_answer" for c in step.tool_calls):
                metadata["tags"] = ["raises-exception"]
            cell = v4.new_code_cell(relative_paths(step.code, [workspace]), outputs=outputs, metadata=metadata)
            cells.append(cell)
        elif isinstance(step, FinalAnswerStep):
            cells.append(v4.new_markdown_cell("## Final answer\n\n" + seen(_answer_text(step.output))))
    notebook: NotebookNode = v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "agentdeck": {"steps": len(memory.steps)},
    })
    nbformat.validate(notebook)
    return notebook


def _read_image(root: Path | None, artifact: str) -> str | None:
    """The base64 PNG of a workspace artifact, or None (not a PNG, outside the workspace, or missing)."""
    if root is None or Path(artifact).suffix.lower() not in _IMAGE_SUFFIXES:
        return None
    path = (root / artifact).resolve()
    try:
        path.relative_to(root.resolve())
    except ValueError:
        return None
    if not path.is_file():
        return None
    return base64.b64encode(path.read_bytes()).decode("ascii")


def save_notebook(memory: AgentMemory, path: str | os.PathLike[str], workspace: str | os.PathLike[str] | None = None,
                  **kwargs: Any) -> Path:
    import nbformat

    target = Path(path)
    nbformat.write(to_notebook(memory, workspace, **kwargs), str(target))
    return target
