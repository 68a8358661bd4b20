"""Export a conversation as Markdown; the notebook export (agents/memory/export_notebook.py) is made of the same
sections.

Both say what the chat said (ui/chat/render.py, render_decisions.py), not what the model was given: the
person's message and the names of their files (from the app's turns; the task holds the upload prompt), the
person's decisions (an edit shown as what ran, marked, the agent's version under the decision; a rejection
with its reason), errors as the person was shown them (`error_type`, `error_message`), data frame answers as
tables (agents/text_tables.py, shared with the chat), steps numbered within their run.

Everything quoted (the person's, the agent's, the sandbox's: text, names, errors) is written by
agents/memory/inert_markdown.py's rule, so the export renders it as text and links only our own file links.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agents.answer_checks.marks import answer_mark
from agents.events import AnswerCheck
from agents.memory.inert_markdown import block, code_span, fenced, file_link, inline, prose
from agents.memory.memory import AgentMemory
from agents.memory.seen_text import as_seen, relative_paths
from agents.memory.steps import (
    ActionStep,
    FinalAnswerStep,
    HistoryStep,
    MemoryStep,
    PlanningStep,
    SummaryStep,
    TaskStep,
)
from agents.models.base import message_text
from agents.shown_value import ShownValue
from agents.step_events import ToolCallRecord
from agents.text_tables import split_tables, table_of_frame, text_with_tables
from agents.text_tables import to_markdown as table_to_markdown

#: How the chat marks what a person changed before it ran (ui/chat/render_decisions.py: EDITED_MARK).
EDITED_NOTE = "✏️ *Edited by you before it ran:*"
#: What the chat calls the agent's version beside the person's edit, by decision kind.
_PROPOSED_LABELS = {"plan": "The agent's plan", "code": "The agent's code (it did not run)",
                    "tool_call": "The agent's arguments (not used)"}
_STEP_FILE = re.compile(r'"<step (\d+)>"')


__all__ = ["fenced", "to_markdown"]  # fenced: the notebook export's too


def _arguments(arguments: Any, seen: Callable[[str], str] = str) -> str:
    """Tool-call arguments as the chat shows them: JSON, keys sorted (fenced after `seen` changed the text)."""
    return fenced(seen(json.dumps(arguments, indent=2, default=str, ensure_ascii=False, sort_keys=True)), "json")


def step_numbers(steps: Sequence[MemoryStep]) -> dict[int, int]:
    """Each plan and action step's number within its run (by position in `steps`), as the chat numbers them:
    the agent counts steps across the conversation, the chat starts each run at 1 (ui/chat/render.py)."""
    numbers: dict[int, int] = {}
    offset: int | None = None
    for index, step in enumerate(steps):
        if isinstance(step, TaskStep):
            offset = None
        elif isinstance(step, (PlanningStep, ActionStep)):
            if offset is None:
                offset = step.step_number - 1
            numbers[index] = max(1, step.step_number - offset)
    return numbers


def renumber_traceback(text: str, number: int) -> str:
    """A traceback with its code's frames named by the step's number in the chat: the sandbox names a step's
    code `<step N>` by how many code runs it has seen (restored chats re-run theirs), which the person never
    saw. The latest run's frames are this step's; lower numbers are functions defined in earlier steps."""
    found = [int(n) for n in _STEP_FILE.findall(text)]
    if not found:
        return text
    latest = max(found)
    return _STEP_FILE.sub(lambda m: f'"<step {number}>"' if int(m.group(1)) == latest else '"<an earlier step>"',
                          text)


def person_message(task: TaskStep, turns: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """What the person sent for `task` and the names of the files they attached, taken from `turns` (the app's
    record of messages: {"task", "text", "uploads": [{"name"}]}): the task holds what the model was given (the
    uploads' previews and how to read them). Without a turn (an agent run outside the app) the task is the
    message. The matching turn is removed from `turns`."""
    for index, turn in enumerate(turns):
        if isinstance(turn, dict) and turn.get("task") == task.task:
            turns.pop(index)
            uploads = turn.get("uploads") or []
            names = [str(u.get("name")) for u in uploads if isinstance(u, dict) and u.get("name")]
            return str(turn.get("text") or ""), names
    return task.task, []


def history_markdown(step: HistoryStep, seen: Callable[[str], str]) -> str:
    """The earlier conversation a chat was continued from, one message a paragraph."""
    lines = [f"**{inline(str(m.get('role', 'user')))}:** {prose(seen(message_text(m)))}" for m in step.history]
    return "## Earlier conversation\n\n" + "\n\n".join(lines)


def task_markdown(task: TaskStep, turns: list[dict[str, Any]], seen: Callable[[str], str]) -> str:
    text, names = person_message(task, turns)
    parts = ["## Task", block(seen(text))] if text.strip() else ["## Task"]
    if names:
        parts.append("📎 Added to the workspace: " + ", ".join(code_span(name) for name in names))
    return "\n\n".join(parts)


def _decision_lines(record: dict[str, Any], seen: Callable[[str], str]) -> list[str]:
    """A decision as the chat's decision node says it (ui/chat/render_decisions.py)."""
    kind, outcome = str(record.get("kind") or ""), str(record.get("outcome") or "")
    detail = " ".join(str(record.get("detail") or "").split())
    proposed = _proposal(record)
    if kind == "question":
        lines = [f"❓ **The agent asks:** {prose(seen(str(proposed.get('question', ''))))}"]
        if outcome == "answer":
            lines.append(f"**You:** {prose(seen(str(record.get('detail') or '')))}")
        else:
            lines.append(f"*Not answered{': ' + inline(seen(detail)) if detail else '.'}*")
        return lines
    title = f"✋ Decision: {inline(outcome)}" + (f" · {inline(seen(detail))}" if outcome == "reject" and detail else "")
    lines = [f"**{title}**"]
    if outcome == "edit":
        theirs = {"plan": proposed.get("plan"), "code": proposed.get("code"),
                  "tool_call": proposed.get("arguments")}.get(kind)
        if theirs is not None:
            shown = (block(seen(str(theirs))) if kind == "plan" else fenced(seen(str(theirs)), "python")
                     if kind == "code" else _arguments(theirs, seen))
            label = _PROPOSED_LABELS.get(kind, "The agent's version")
            lines.append(f"{label}:\n\n{shown}")
    elif outcome != "reject" and detail:
        lines.append(inline(seen(detail)))
    return lines


def _decisions_of(step: PlanningStep | ActionStep) -> list[dict[str, Any]]:
    return [record for record in step.decisions if isinstance(record, dict)]


def _proposal(record: dict[str, Any]) -> dict[str, Any]:
    """What a decision record says the agent proposed ({} for an old or hand-made record)."""
    proposed = record.get("proposed")
    return proposed if isinstance(proposed, dict) else {}


def _edit_of(records: list[dict[str, Any]], kind: str, call_id: str | None = None) -> dict[str, Any] | None:
    for record in records:
        proposed = _proposal(record)
        if record.get("kind") == kind and record.get("outcome") == "edit" \
                and (call_id is None or proposed.get("call_id") == call_id):
            return record
    return None


def plan_markdown(step: PlanningStep, seen: Callable[[str], str]) -> str:
    records = _decisions_of(step)
    section = ["### " + ("Updated plan" if step.is_update else "Plan")]
    plan = block(seen(step.plan))
    section.append(f"{EDITED_NOTE}\n\n{plan}" if _edit_of(records, "plan") or step.edited_by_user else plan)
    for record in records:
        section += _decision_lines(record, seen)
        if record.get("kind") == "plan" and record.get("outcome") == "reject":
            reason = str(record.get("detail") or "").strip()
            said = f"Reason: {prose(seen(reason))}" if reason else "No reason given."
            section.append("🚫 You rejected this plan. " + said)
    return "\n\n".join(section)


def _call_markdown(call: ToolCallRecord, records: list[dict[str, Any]], seen: Callable[[str], str]) -> list[str]:
    """A tool call as the chat shows it: its arguments (the person's, marked, when they edited them), the
    decisions about it, and what came back."""
    mine = [r for r in records if r.get("kind") == "tool_call" and _proposal(r).get("call_id") == call.call_id]
    if call.name == "ask_user":
        mine += [r for r in records if r.get("kind") == "question" and r not in mine]
    edit = _edit_of(mine, "tool_call", call.call_id)
    arguments = edit["edited"] if edit is not None and isinstance(edit.get("edited"), dict) else call.arguments
    shown = _arguments(arguments, seen)
    lines = [f"🛠️ Tool call {code_span(call.name)}:\n\n" + (f"{EDITED_NOTE}\n\n{shown}" if edit is not None else shown)]
    for record in mine:
        lines += _decision_lines(record, seen)
        records.remove(record)
    if call.finished and call.rejected:  # the person's decision, with their reason (the output), as the chat says
        reason = prose(seen(call.output)) if call.output.strip() else ""
        said = f"Reason: {reason}" if reason else "No reason given."
        lines.append(f"🚫 You rejected the call to {code_span(call.name)}. {said}")
    elif call.finished:
        label = f"💥 {code_span(call.name)} failed:" if call.is_error else "Result:"
        lines.append(f"{label}\n\n" + fenced(seen(call.output), "text"))
    return lines


def error_markdown(step: ActionStep, number: int, seen: Callable[[str], str]) -> str | None:
    """The step's error as the person was shown it (`error_type`, `error_message`), not what the model was told;
    a step the person rejected says so, with their reason."""
    if step.error_type == "RejectedByUser":
        reason = step.error_message if step.error_message and step.error_message != "Rejected." else ""
        return "🚫 You rejected this step. " + (f"Reason: {prose(seen(reason))}" if reason else "No reason given.")
    if step.error_type:
        message = renumber_traceback(step.error_message or step.error or "", number)
        return f"**Error: {inline(step.error_type)}**\n\n" + fenced(seen(message), "text")
    if step.error and not step.call_records:  # saved before errors recorded what the person was shown
        return "Error:\n\n" + fenced(seen(renumber_traceback(step.error, number)), "text")
    return None


def _action_markdown(step: ActionStep, number: int, seen: Callable[[str], str],
                     workspace: str | os.PathLike[str] | None) -> str:
    records = _decisions_of(step)
    section = [f"### Step {number}"]
    thought = step.model_output.split("```")[0].strip() if step.code else step.model_output.strip()
    if thought:
        section.append(block(seen(thought)))
    if step.code:
        code = fenced(relative_paths(step.code, [workspace]), "python")  # what ran: the person's, if edited
        section.append(f"{EDITED_NOTE}\n\n{code}" if _edit_of(records, "code") else code)
        while records and records[0].get("kind") == "code":
            section += _decision_lines(records.pop(0), seen)
    calls = [c for c in map(ToolCallRecord.from_dict, step.call_records) if c is not None]
    if step.logs:
        section.append("Output:\n\n" + fenced(seen(step.logs), "text"))
    value = value_markdown(step, number, seen)
    if value:
        section.append(value)
    for call in calls:
        section += _call_markdown(call, records, seen)
    if not calls and not step.code:  # saved before calls were recorded
        for legacy in step.tool_calls:
            section.append(f"🛠️ Tool call {code_span(legacy.name)}:\n\n" + _arguments(legacy.arguments, seen))
        if step.observations:
            section.append("Observation:\n\n" + fenced(seen(step.observations), "text"))
    for record in records:  # any left (a record without its call): shown, not lost
        section += _decision_lines(record, seen)
    for artifact in step.artifacts:
        shown = seen(artifact)
        if Path(artifact).suffix.lower() in (".png", ".jpg", ".jpeg", ".gif", ".webp"):
            section.append(file_link(shown, image=True))
        else:  # an SVG too: as an image some viewers would run its script
            section.append(f"File: {file_link(shown)}")
    error = error_markdown(step, number, seen)
    if error:
        section.append(error)
    return "\n\n".join(section)


def value_markdown(step: ActionStep, number: int, seen: Callable[[str], str]) -> str | None:
    """The code's last expression as the chat showed it (agents/shown_value.py): a frame as a table, else its text."""
    value = ShownValue.from_data(step.last_value)
    if value is None:
        return None
    label = f"Out [step {number}]: {inline(value.type_name)}"
    if not value.is_table:
        return f"{label}\n\n" + fenced(seen(value.text), "text")
    return frame_markdown(value, label, seen)


def frame_markdown(value: ShownValue, label: str, seen: Callable[[str], str]) -> str:
    """A frame's table (as the chat's table holds it) under `label`, with how much of the frame it shows."""
    table = value.to_table()
    table.header = [seen(name) for name in table.header]
    table.rows = [[seen(cell) for cell in row] for row in table.rows]
    note = value.note()
    return f"{label}" + (f" ({note})" if note else "") + "\n\n" + table_to_markdown(table)


def answer_markdown(value: Any, seen: Callable[[str], str], shown: Any = None) -> str:
    """A final answer as the chat shows it: text as it is, a data frame (`shown`, its table as the chat's table
    holds it: FinalAnswerStep.answer_value; an object, or printed in the text) as a table (agents/text_tables.py,
    shared with the chat)."""
    frame = ShownValue.from_data(shown)
    if frame is not None and frame.is_table:
        return frame_markdown(frame, f"Answer: {inline(frame.type_name)}", seen)
    if isinstance(value, str):
        return _text_and_tables(seen(value))
    table = table_of_frame(value)
    if table is not None:
        return table_to_markdown(table)
    return prose(seen(repr(value)))


def _text_and_tables(text: str) -> str:
    """An answer's text with its printed frames as tables (cells escaped by agents/text_tables.py), the rest
    inert (`block`; text with a code block has no tables: `text_with_tables`)."""
    if text_with_tables(text) == text:
        return block(text)
    return "\n\n".join(table_to_markdown(s.table) if s.table is not None else prose("\n".join(s.lines).strip("\n"))
                       for s in split_tables(text)).strip()


# -- Markdown ----------------------------------------------------------------------------------------
def to_markdown(memory: AgentMemory, title: str = "AgentDeck conversation",
                workspace: str | os.PathLike[str] | None = None,
                turns: Sequence[dict[str, Any]] = ()) -> str:
    """The conversation as Markdown, as the chat showed it: the person's messages (from `turns`, the app's
    record of what was sent) and attached files, plans, each step's code, output, tool calls, the person's
    decisions (edits shown as what ran, marked), errors as shown, artifacts, answers (frames as tables).

    No prompt fences, and paths relative to `workspace` (agents/memory/seen_text.py); steps numbered
    within their run, as the chat numbers them.
    """
    def seen(text: str) -> str:
        return as_seen(text, [workspace])

    pending = [dict(turn) for turn in turns if isinstance(turn, dict)]
    numbers = step_numbers(memory.steps)
    parts: list[str] = [f"# {inline(title)}"]  # a chat title is plain text, as the side list shows it
    for index, step in enumerate(memory.steps):
        if isinstance(step, HistoryStep):
            parts.append(history_markdown(step, seen))
        elif isinstance(step, TaskStep):
            parts.append(task_markdown(step, pending, seen))
        elif isinstance(step, PlanningStep):
            parts.append(plan_markdown(step, seen))
        elif isinstance(step, SummaryStep):
            parts.append(f"### Summary of {step.folded_steps} earlier steps (compaction)\n\n"
                         + block(seen(step.summary)))
        elif isinstance(step, ActionStep):
            parts.append(_action_markdown(step, numbers.get(index, step.step_number), seen, workspace))
        elif isinstance(step, FinalAnswerStep):
            check = AnswerCheck.from_dict(step.check)  # the chat's mark under the answer, as it showed it
            mark = "\n\n" + answer_mark(check) if check is not None else ""
            parts.append("## Final answer\n\n" + answer_markdown(step.output, seen, step.answer_value) + mark)
    return "\n\n".join(parts) + "\n"
