"""How what a step did shows in the chat: its code, the tool calls it made and their results, what the code
printed, what the model is sent next, the files it saved (charts inline), its errors and flagged instructions.

Each goes into its step's node (ui/chat/step_tree.py), and into the step's record for the preview shown under
the folded step (ui/chat/step_output.py). A base of `Transcript` (ui/chat/render.py), which dispatches the
events here by class.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agents import events as ev
from agents.memory.export import renumber_traceback
from agents.shown_value import ShownValue
from ui.chat.formatting import IMAGE_EXTENSIONS, fence, image_message, thought_without_code
from ui.chat.step_output import CallOutcome, error_line, rejection_text
from ui.chat.step_tree import StepTree
from ui.chat.tree import Node

if TYPE_CHECKING:  # published_files imports Gradio; the chat does not
    from ui.chat.published_files import Published

LOGS_LABEL = "📜 *Output*\n\n"


class ExecutionRendering(StepTree):
    """The handlers of a step's code, tool calls, output, files and errors, and the state they keep."""

    def __init__(self, publish: Callable[[str], Published] | None = None) -> None:
        super().__init__(publish)
        self.files: list[dict[str, Any]] = []  # non-image artifacts: {"path", "relative_path", "size_bytes"}
        self.files_revision = 0  # counts new or changed non-image files (the files panel shows their latest)
        self._raw_logs: dict[str, str] = {}  # logs without a step (node id -> everything printed)
        self._images_shown: set[tuple] = set()  # (scope, content digest or path) of the images in the chat

    def _on_code_proposed(self, e: ev.CodeProposed) -> None:
        node = self._step_node(e)
        if node is None:
            node = self.add_note("", title="💻 Code", status="done")
        node.parts["thought"] = thought_without_code(node.parts.get("thought", ""))
        node.parts["code"] = fence(e.code, "python")
        if node.id in self._steps:
            self._steps[node.id].code = e.code

    def _on_tool_call_proposed(self, e: ev.ToolCallProposed) -> None:
        step = self._step_node(e)
        args = fence(json.dumps(e.arguments, indent=2, default=str, ensure_ascii=False), "json")
        node = Node(f"call:{e.call_id}", title=f"🛠️ {e.tool_name}", status="pending", parts={"args": args},
                    started=e.timestamp)
        self.call_nodes[e.call_id] = node
        self._add(node, parent=step or self._step_parent(e))

    def _on_tool_call_result(self, e: ev.ToolCallResult) -> None:
        node = self.call_nodes.get(e.call_id)
        if node is None:
            node = self._child(self._step_node(e), f"result-{e.call_id}", f"🛠️ {e.tool_name}", e)
        node.status = "done"
        node.duration = round(max(0.0, e.timestamp - node.started), 2)
        step = self._step_node(e)
        if step is not None and step.id in self._steps and node in step.children:
            self._steps[step.id].calls.append(CallOutcome(e.tool_name, str(e.output), e.is_error, e.rejected))
        if e.rejected:  # the person's decision, not a failure: their reason, as a rejected step shows it
            node.title = f"🚫 {e.tool_name}: you rejected this call"
            node.parts["result"] = rejection_text(e.output)
        elif e.is_error:
            node.title = f"💥 {e.tool_name} failed"
            node.parts["result"] = "**Error:**\n" + fence(e.output)
        else:
            node.parts["result"] = "**Result:**\n" + fence(e.output)

    def _on_execution_log(self, e: ev.ExecutionLog) -> None:
        """What the code prints goes into its step, which is open while it runs: it shows as it streams."""
        if not e.text:
            return
        step = self._step_node(e)
        if step is not None and step.id in self._steps:
            record = self._steps[step.id]
            record.logs += e.text
            step.parts["logs"] = LOGS_LABEL + fence(record.logs)
            return
        node = self._child(None, "logs", "📜 Output", e)
        self._raw_logs[node.id] = self._raw_logs.get(node.id, "") + e.text
        node.parts["logs"] = LOGS_LABEL + fence(self._raw_logs[node.id])

    def _on_observation(self, e: ev.Observation) -> None:
        """What the model is sent after the step (logs, last value, errors, fenced tool output), as it is;
        left out when it only repeats the step's execution logs shown just above it."""
        if e.value is not None:
            self._show_value(e)
        text = (e.text or "").strip()
        if not text:
            return
        step = self._step_node(e)
        logs = self._steps[step.id].logs if step is not None and step.id in self._steps else ""
        if logs.strip() and text.removeprefix("Observation:").strip() == f"Execution logs:\n{logs.strip()}":
            return
        node = self._child(step, "observation", "👁️ What the model sees next", e)
        node.parts["text"] = fence(e.text)

    def _show_value(self, e: ev.Observation) -> None:
        """The code's last expression, where the eye goes (beside the step's charts): a frame as a table."""
        value = ShownValue.from_data(e.value)
        if value is None:
            return
        from ui.chat.value_table import table_message, text_message, value_label

        number = self.step_in_run(e)
        if value.is_table:
            node = Node(self._new_id("value"), file=table_message(value, value_label(value, number)))
        else:
            node = Node(self._new_id("value"), parts={"text": text_message(value, number)})
        self._add(node, parent=self._step_parent(e))
        step = self._step_node(e)
        if step is not None and step.id in self._steps:
            self._steps[step.id].images.append(node)  # the step's preview goes before it, as before a chart

    def _on_artifact_created(self, e: ev.ArtifactCreated) -> None:
        is_image = e.artifact_kind == "image" or os.path.splitext(e.path)[1].lower() in IMAGE_EXTENSIONS
        self.files_revision += 1  # the files panel lists charts too (ui/panels/files.py)
        if is_image:
            # A step may save the same figure twice (explicit + auto-capture): one message per content and step.
            # A figure saved again in a later step is a new message; the earlier one keeps showing what it
            # showed then (its published copy).
            shown = self.shown_file(e.path)
            if shown is not None:
                if ("step", e.run_id, e.parent_id, e.step, shown[1] or e.path) not in self._images_shown:
                    self._add_image(shown, e.relative_path, e)
        else:
            if all(f["path"] != e.path for f in self.files):
                self.files.append({"path": e.path, "relative_path": e.relative_path, "size_bytes": e.size_bytes})
            step = self._step_node(e)
            if step is not None:
                saved = step.parts.get("files", "📄 Saved:")
                if f"`{e.relative_path}`" not in saved:
                    step.parts["files"] = saved + f" `{e.relative_path}`"

    def _on_step_error(self, e: ev.StepError) -> None:
        step = self._step_node(e)
        if e.error_type == "RejectedByUser":  # a person's decision, not a failure: show their reason
            node = self._child(step, f"rejected-{self._counter}", "🚫 You rejected this step", e)
            node.parts["text"] = rejection_text("" if e.message == "Rejected." else e.message)
            if step is not None and step.id in self._steps:
                self._steps[step.id].error = "🚫 You rejected this step. " + node.parts["text"]
            return
        node = self._child(step, f"error-{self._counter}", f"💥 Error: {e.error_type}", e)
        # The sandbox names its code `<step N>` by the runs it has seen; the chat numbers steps per run.
        message = renumber_traceback(e.message, self.step_in_run(e))
        node.parts["text"] = f'<span class="ad-error">{e.error_type}</span>\n\n' + fence(message)
        if step is not None and "⚠️" not in (step.title or ""):
            step.title = f"{step.title} ⚠️"
        if step is not None and step.id in self._steps:
            self._steps[step.id].error = error_line(e.error_type, message)

    def _on_injection_flagged(self, e: ev.InjectionFlagged) -> None:
        node = self._child(self._step_node(e), f"injection-{self._counter}",
                           f"🛡️ Suspicious instructions in {e.source}", e)
        node.parts["text"] = "The agent was told to ignore these instructions:\n" + fence(e.excerpt)

    def _add_image(self, shown: tuple[str, str | None], alt: str, e: ev.Event) -> None:
        path, digest = shown
        identity = digest or path
        self._images_shown.add(("step", e.run_id, e.parent_id, e.step, identity))
        self._images_shown.add(("run", e.run_id, identity))
        image = self._add(Node(self._new_id("image"), file=image_message(path, alt)))
        step = self._step_node(e)
        if step is not None and step.id in self._steps:
            self._steps[step.id].images.append(image)
