"""What a finished step shows under its folded title: the first lines of what its code printed (data frames as
tables), the results of the tools it called, the files it saved (as links) and its error.

Why: a finished step folds to one line, so what it found would take a click (two, when the logs were a
nested collapsible) to read. The chat shows this preview as a plain message under the step, after what the
step added at its level while it ran (a question and its answer) and before its charts. As in a notebook (the
cell, then its output), what the preview shows whole is not shown again inside the folded step: the step keeps
its code, and its output only when the preview had to leave some out (issue 31: the output read twice).
The text is Markdown for the chat (ui/chat/tree.py neutralises it like every message).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from agents.text_tables import MAX_CELL_CHARS, MAX_COLUMNS, MAX_ROWS, Table, split_tables, to_markdown
from ui.chat.formatting import clip, fence, first_words, thought_without_code
from ui.chat.tree import Node

#: A preview shows at most this many printed lines (tables count their rows) and this many tables.
PREVIEW_LINES = 12
PREVIEW_TABLES = 2
#: A tool's result shows at most this many lines.
CALL_LINES = 6
#: Only the start of long logs is searched for tables (this runs once per step, on the streaming thread).
SEARCHED_CHARS = 12_000
#: The class the chat's CSS (ui/web/chat_view.py) knows a preview by; ui/chat/safe_markdown.py keeps it.
MARKER = '<span class="ad-step-output"></span>'


@dataclass
class CallOutcome:
    tool_name: str
    output: str  # a rejected call's: the person's reason
    is_error: bool = False
    rejected: bool = False


@dataclass
class StepRecord:
    """What one step produced, kept for its preview, and where the preview goes."""
    siblings: list[Node]  # the list the step's node sits in (the chat's top level, or a tool call's children)
    logs: str = ""
    error: str = ""
    calls: list[CallOutcome] = field(default_factory=list)
    images: list[Node] = field(default_factory=list)  # charts shown at the step's level while it ran
    code: str = ""  # the code it ran (its folded title says what it did)
    tokens: int = 0  # its model reply's tokens (the title of a step stopped before its end gives them)

    def place(self, preview: Node) -> None:
        """Put the preview after everything the step added at its level, before its charts."""
        index = len(self.siblings)
        for image in self.images:
            if image in self.siblings:
                index = min(index, self.siblings.index(image))
        self.siblings.insert(index, preview)


_THOUGHT_LABEL = re.compile(r"^\s*(?:\*\*)?(?:Thought|Thinking|Plan)\s*:?\s*(?:\*\*)?\s*", re.IGNORECASE)
_SKIPPED_CODE = re.compile(r"^\s*(?:#|import\s|from\s+\S+\s+import\s|$)")
#: A folded step's summary is at most this long.
SUMMARY_CHARS = 80


def step_summary(thought: str, code: str) -> str:
    """What a step did, for its folded title: the first sentence of the model's thought, or else the first line
    of its code that does something (imports and comments skipped); "" when it has neither."""
    text = _THOUGHT_LABEL.sub("", thought_without_code(thought or "")).strip()
    if text:
        return first_words(text, SUMMARY_CHARS)
    for line in (code or "").splitlines():
        if not _SKIPPED_CODE.match(line):
            line = " ".join(line.split())
            return "Ran " + (line if len(line) <= SUMMARY_CHARS - 4 else line[:SUMMARY_CHARS - 5] + "…")
    return ""


def _trimmed(lines: list[str]) -> list[str]:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


@dataclass
class Preview:
    text: str
    whole: bool  # it shows everything the logs hold (nothing left out, every table whole): the step need not


def _table_whole(table: Table) -> bool:
    """Whether the preview's Markdown of `table` leaves nothing out (rows, columns, cell text)."""
    cells = [table.header, *table.rows]
    return (table.complete and len(table.rows) <= MAX_ROWS and max(map(len, cells)) <= MAX_COLUMNS
            and all(len(cell) <= MAX_CELL_CHARS for row in cells for cell in row))


def logs_preview(logs: str, step_title: str) -> Preview:
    """The start of `logs` as Markdown: text lines fenced, printed frames as tables, and what is left out."""
    lines = logs.rstrip().split("\n")
    searched = "\n".join(lines)
    cut = len(searched) > SEARCHED_CHARS
    if cut:
        searched = searched[:searched.rfind("\n", 0, SEARCHED_CHARS) + 1 or SEARCHED_CHARS].rstrip("\n")
    segments = split_tables(searched)
    if cut and segments and segments[-1].table is not None:
        segments[-1].table.complete = False
    budget, tables, consumed = PREVIEW_LINES, 0, 0
    whole = not cut
    blocks: list[str] = []
    for segment in segments:
        if budget <= 0 or (segment.table is not None and tables >= PREVIEW_TABLES):
            break
        if segment.table is not None:
            tables += 1
            whole = whole and _table_whole(segment.table)
            blocks.append(to_markdown(segment.table))
            budget -= min(len(segment.table.rows), PREVIEW_LINES // 2)
            consumed += segment.size
            continue
        shown = segment.lines[:budget]
        consumed += len(shown)
        budget -= len(shown)
        if _trimmed(shown):
            blocks.append(fence("\n".join(_trimmed(shown))))
    left = len(_trimmed(lines[consumed:]))
    if left:
        blocks.append(f"*… {left} more line{'s' if left != 1 else ''} of output: open **{step_title}** for all of it.*")
    return Preview("\n\n".join(blocks), whole=whole and not left)


def rejection_text(reason: str) -> str:
    """What the chat says of a person's rejection (a step's or a tool call's): their reason, or that none was given."""
    return f"Reason: {reason}" if reason.strip() else "No reason given."


def call_preview(call: CallOutcome) -> str:
    """A tool's result (or failure, or the person's rejection) in a few lines."""
    if call.rejected:
        return f"🚫 You rejected the call to **{call.tool_name}**. {rejection_text(call.output)}"
    lines = _trimmed(call.output.strip().split("\n"))
    shown = "\n".join(lines[:CALL_LINES])
    if len(lines) > CALL_LINES:
        shown += f"\n… ({len(lines) - CALL_LINES} more lines)"
    if call.is_error:
        return f'<span class="ad-error">{call.tool_name} failed</span>\n' + fence(shown)
    return f"🛠️ **{call.tool_name}**\n" + fence(shown)


def step_preview(step_title: str, record: StepRecord, saved: str = "") -> Preview:
    """The preview of a finished step (text '' when it printed, called, saved and failed nothing); `whole` when
    it shows all the step printed, so the step itself need not show it again."""
    blocks = []
    whole = True
    if record.logs.strip():
        logs = logs_preview(record.logs, step_title)
        blocks.append(logs.text)
        whole = logs.whole
    blocks += [call_preview(call) for call in record.calls if call.tool_name != "final_answer"]
    if saved:
        blocks.append(saved)
    if record.error:
        blocks.append(record.error)
    if not blocks:
        return Preview("", whole=True)
    return Preview(MARKER + "\n\n" + "\n\n".join(blocks), whole=whole)


#: A line that names an exception: "NameError: name 'df' is not defined", "SecurityError: ...".
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit|Warning)\b.*")


def error_line(error_type: str, message: str) -> str:
    """The line that names the exception (Python puts it last, but a syntax error's report may end with the
    code and its `^` marker), styled as the chat's errors are."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip(" \t^~")]
    named = [line for line in lines if EXCEPTION_LINE.match(line)]
    chosen = named[-1] if named else (lines[-1] if lines else error_type)
    last = clip(chosen, 300)
    return f'<span class="ad-error">{error_type}</span> `{last.replace("`", "ˋ")}`'
