"""Agent events -> chat nodes: how each event of a run shows in the chat, and the run's status line.

`Transcript` is the chat tree (ui/chat/tree.py) fed with agent events. Each agent step is a collapsible
"thought"; its code, logs, errors and tool calls are its children, and a managed agent's steps hang under
the tool call that started them (event.parent_id == that call's call_id). Final answers are plain
assistant messages, images are inline file messages. It also keeps the run's progress (step, elapsed
time, tokens, what a paused run waits for) for the status line. Nothing here imports Gradio: it is
unit-tested on hand-made events.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agents import events as ev
from agents.guard import detect_injection
from ui.chat.file_links import FileLinker
from ui.chat.formatting import (
    IMAGE_EXTENSIONS,
    clip,
    fence,
    format_tokens,
    format_value,
    image_message,
    scrub_server_paths,
    thought_without_code,
)
from ui.chat.render_decisions import WAITING_MARK, DecisionRendering
from ui.chat.status_line import status_line
from ui.chat.step_output import CallOutcome, StepRecord, error_line, rejection_text, step_preview
from ui.chat.tree import Node

if TYPE_CHECKING:  # published_files imports Gradio; the chat does not
    from ui.chat.published_files import Published

CONTINUE_HINT = "Send **continue** to let the agent go on from where it stopped (it keeps its steps and variables)"
LOGS_LABEL = "📜 *Output*\n\n"
NO_ANSWER_GUESS = ("⏱️ **Not a final answer**: the agent ran out of steps. Asked for its best guess from the steps "
                   "so far, the model wrote (nothing here was checked by running code):")


class Transcript(DecisionRendering):
    """The chat of one session, fed with agent events and person-side notes."""

    def __init__(self, workdir: str | None = None, publish: Callable[[str], Published] | None = None) -> None:
        super().__init__(publish)
        self.workdir = workdir
        self.step_nodes: dict[tuple[str, str | None, int], Node] = {}
        self.call_nodes: dict[str, Node] = {}
        self.decision_nodes: dict[str, Node] = {}
        self.requests: dict[str, ev.DecisionRequested] = {}  # by request id: what each decision was about
        self.files: list[dict[str, Any]] = []  # non-image artifacts: {"path", "relative_path", "size_bytes"}
        self.files_revision = 0  # counts new or changed non-image files (the files panel shows their latest)
        self._raw_logs: dict[str, str] = {}  # logs without a step (node id -> everything printed)
        self._steps: dict[str, StepRecord] = {}  # step node id -> what it produced, for its preview
        self._images_shown: set[tuple] = set()  # (scope, content digest or path) of the images in the chat
        self.top_run_id: str | None = None
        self.current_step = 0  # the current run's step, numbered within the run (as its step titles are)
        #: The agent's step number before each run's first step, by run id: the agent numbers its steps across
        #: the whole conversation, a person counts them within the run (titles and the status must agree).
        self.run_step_offsets: dict[str, int] = {}
        self.out_of_steps = False  # the current run used all its steps: its answer is only a best guess
        self.max_steps = 0
        self.run_started = 0.0
        self.run_tokens: Any = None
        self.last_status = ""
        self.finished: ev.RunFinished | None = None
        self.waiting: str | None = None  # the kind of decision the run waits for
        self.retrying: ev.ModelRetrying | None = None  # the model call waiting to be retried, if any

    # ----- the person's side -----------------------------------------------------------------------
    def add_message(self, text: str, uploads: list[Any]) -> None:
        """What the person sent, as a live chat and a reopened one show it: the text and the files, the uploads'
        previews, and a warning for each upload that tries to give instructions (the agent is warned too)."""
        good = [r for r in uploads if r.ok]
        self.add_user(text, [str(r.path) for r in good])
        self.add_uploads(uploads)
        for r in good:
            for finding in detect_injection(r.preview):
                self.apply(ev.InjectionFlagged(run_id="upload", step=0, source=f"upload:{r.safe_name}",
                                               excerpt=finding.excerpt))

    def add_answer(self, request_id: str, text: str) -> None:
        """The person's answer to the agent's question, once (shown when sent, and by its DecisionMade)."""
        node_id = f"answer:{request_id}"
        if node_id not in self.by_id and text.strip():
            self._add(Node(node_id, role="user", parts={"text": text}))

    # ----- events ----------------------------------------------------------------------------------
    def _step_node(self, event: ev.Event) -> Node | None:
        return self.step_nodes.get((event.run_id, event.parent_id, event.step))

    def _step_parent(self, event: ev.Event) -> Node | None:
        return self.call_nodes.get(event.parent_id) if event.parent_id else None

    def _child(self, step: Node | None, key: str, title: str, event: ev.Event) -> Node:
        """The child of `step` called `key`, created on first use (top level when there is no step)."""
        node_id = f"{step.id}/{key}" if step else self._new_id(key)
        node = self.by_id.get(node_id)
        if node is None:
            node = self._add(Node(node_id, title=title, status="done"), parent=step or self._step_parent(event))
        return node

    def apply(self, event: ev.Event) -> None:
        """Show `event` in the chat (see HANDLERS below; events the chat does not show are NOT_SHOWN).

        A subclass of an event is shown as that event."""
        for cls in type(event).__mro__:
            handler = HANDLERS.get(cls)
            if handler is not None:
                handler(self, event)
                return

    def _on_run_started(self, e: ev.RunStarted) -> None:
        if e.parent_id is None:
            self.top_run_id = e.run_id
            self.max_steps = e.max_steps
            self.run_started = e.timestamp
            self.current_step = 0
            self.out_of_steps = False
            self.finished = None
        elif e.parent_id in self.call_nodes:
            node = self.call_nodes[e.parent_id]
            node.parts["agent"] = f"Managed agent **{e.agent_name}** is working on: {clip(e.task, 500)}"

    def step_in_run(self, e: ev.Event) -> int:
        """The event's step numbered within its run: the run's first step is 1.

        The offset comes from the run's first step seen, not from `RunStarted.step`, so a chat rebuilt from
        saved memory (whose runs start at 0 there while its steps keep the agent's numbers) counts the same way."""
        offset = self.run_step_offsets.setdefault(e.run_id, e.step - 1)
        return max(1, e.step - offset)

    def _on_step_started(self, e: ev.StepStarted) -> None:
        kind = e.step_type
        number = self.step_in_run(e)
        title = {"planning": "🧭 Planning",
                 "final": "⏱️ Out of steps: asking for a best guess"}.get(kind, f"Step {number}")
        if e.parent_id:
            title = "↳ " + title
        node = Node(f"step:{e.run_id}:{e.parent_id or ''}:{e.step}:{kind}", title=title, status="pending",
                    started=e.timestamp)
        self.step_nodes[(e.run_id, e.parent_id, e.step)] = node
        parent = self._step_parent(e)
        self._add(node, parent=parent)
        self._steps[node.id] = StepRecord(siblings=parent.children if parent is not None else self.roots)
        if e.parent_id is None:
            self.current_step = number
            self.out_of_steps = self.out_of_steps or kind == "final"

    def _on_model_retrying(self, e: ev.ModelRetrying) -> None:
        """Say why nothing is happening; a restarted stream's text so far is void, so it goes."""
        if e.parent_id is None:
            self.retrying = e
        node = self._step_node(e)
        if node is None:
            return
        if e.discarded_text and "code" not in node.parts:
            node.parts.pop("thought", None)
        node.parts["retry"] = f"*⏳ Model call retried ({e.reason}), attempt {e.attempt + 1}.*"

    def _on_model_text_delta(self, e: ev.ModelTextDelta) -> None:
        if e.parent_id is None:
            self.retrying = None
        node = self._step_node(e)
        if node is not None and "code" not in node.parts:
            node.parts["thought"] = node.parts.get("thought", "") + e.text

    def _on_model_output(self, e: ev.ModelOutput) -> None:
        if e.parent_id is None:
            self.retrying = None
        node = self._step_node(e)
        if node is None:
            return
        if "code" in node.parts:
            node.parts["thought"] = thought_without_code(e.text)
        elif "plan" not in node.parts:
            node.parts["thought"] = e.text
        tokens = format_tokens(e.token_usage)
        if tokens:
            node.log = tokens

    def _on_plan_proposed(self, e: ev.PlanProposed) -> None:
        node = self._step_node(e)
        title = "🧭 Updated plan" if e.is_update else "🧭 Plan"
        if node is not None and node.id.endswith(":planning"):
            node.title = title if not e.parent_id else "↳ " + title
            node.parts.pop("thought", None)
            node.parts["plan"] = e.plan
        else:
            self._add(Node(self._new_id("plan"), title=title, status="done", parts={"plan": e.plan}),
                      parent=self._step_parent(e))

    def _on_code_proposed(self, e: ev.CodeProposed) -> None:
        node = self._step_node(e)
        if node is None:
            node = self.add_note("", title="💻 Code", status="done")
        node.parts["thought"] = thought_without_code(node.parts.get("thought", ""))
        node.parts["code"] = fence(e.code, "python")

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
        text = (e.text or "").strip()
        if not text:
            return
        step = self._step_node(e)
        logs = self._steps[step.id].logs if step is not None and step.id in self._steps else ""
        if logs.strip() and text.removeprefix("Observation:").strip() == f"Execution logs:\n{logs.strip()}":
            return
        node = self._child(step, "observation", "👁️ What the model sees next", e)
        node.parts["text"] = fence(e.text)

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
        node.parts["text"] = f'<span class="ad-error">{e.error_type}</span>\n\n' + fence(e.message)
        if step is not None and "⚠️" not in (step.title or ""):
            step.title = f"{step.title} ⚠️"
        if step is not None and step.id in self._steps:
            self._steps[step.id].error = error_line(e.error_type, e.message)

    def _on_injection_flagged(self, e: ev.InjectionFlagged) -> None:
        node = self._child(self._step_node(e), f"injection-{self._counter}",
                           f"🛡️ Suspicious instructions in {e.source}", e)
        node.parts["text"] = "The agent was told to ignore these instructions:\n" + fence(e.excerpt)

    def _on_memory_compacted(self, e: ev.MemoryCompacted) -> None:
        self.add_note(f"Older steps were summarised: {e.tokens_before:,} → {e.tokens_after:,} tokens "
                      f"({e.steps_folded} steps folded).", title="🗜️ Memory compacted", status="done")

    def _on_step_finished(self, e: ev.StepFinished) -> None:
        node = self._step_node(e)
        if node is None:
            return
        node.duration = round(e.duration_s, 2)
        tokens = format_tokens(e.token_usage)
        if tokens:
            node.log = tokens
        self._finish_step(node)

    def _finish_step(self, node: Node) -> None:
        """Fold the step (Gradio closes a thought whose status is done) and show its key output under it."""
        node.status = "done"
        self._close_children(node)
        record = self._steps.pop(node.id, None)
        if record is None:
            return
        title = (node.title or "the step").replace(" ⚠️", "").replace(WAITING_MARK, "")
        saved = FileLinker(self.workdir, self.publish).link(node.parts["files"]) if "files" in node.parts else ""
        text = step_preview(title, record, saved)
        if text:
            preview = Node(f"{node.id}/output", parts={"text": text})
            record.place(preview)
            self.by_id[preview.id] = preview

    def _close_children(self, node: Node) -> None:
        for child in node.children:
            if child.status == "pending" and not child.id.startswith("call:"):
                child.status = "done"

    def _on_final_answer(self, e: ev.FinalAnswer) -> None:
        if e.parent_id:
            call = self.call_nodes.get(e.parent_id)
            if call is not None:
                call.parts["answer"] = "**Managed agent's answer:**\n\n" + format_value(e.value)
            return
        if self.out_of_steps:  # not an answer the agent gave: say so, and show the guess quoted
            guess = "\n".join("> " + line for line in format_value(e.value).splitlines())
            self._add(Node(self._new_id("guess"), parts={"text": NO_ANSWER_GUESS + "\n\n" + guess}))
            return
        text = format_value(e.value)
        if isinstance(e.value, str):
            text = FileLinker(self.workdir, self.publish).link(text)
        self._add(Node(self._new_id("answer"), parts={"text": text}))
        value = e.value
        if isinstance(value, str) and os.path.splitext(value)[1].lower() in IMAGE_EXTENSIONS:
            path = value if os.path.isabs(value) or not self.workdir else os.path.join(self.workdir, value)
            shown = self.shown_file(path) if os.path.isfile(path) else None  # not shown again if this run did
            if shown is not None and ("run", e.run_id, shown[1] or path) not in self._images_shown:
                self._add_image(shown, os.path.basename(path), e)

    def _add_image(self, shown: tuple[str, str | None], alt: str, e: ev.Event) -> None:
        path, digest = shown
        identity = digest or path
        self._images_shown.add(("step", e.run_id, e.parent_id, e.step, identity))
        self._images_shown.add(("run", e.run_id, identity))
        image = self._add(Node(self._new_id("image"), file=image_message(path, alt)))
        step = self._step_node(e)
        if step is not None and step.id in self._steps:
            self._steps[step.id].images.append(image)

    def _on_run_finished(self, e: ev.RunFinished) -> None:
        if e.parent_id is not None:
            return
        self.finished = e
        self.waiting = None
        self.retrying = None
        self.run_tokens = e.token_usage
        for node in list(self.by_id.values()):
            if node.status == "pending":
                if node.duration is None and node.title and not node.title.startswith("✋"):
                    node.duration = round(max(0.0, e.timestamp - node.started), 2)
                if node.id.startswith("step:"):
                    self._finish_step(node)
                node.status = "done"
        state = str(getattr(e.state, "value", e.state))
        if state == "interrupted":
            self.add_note("⏹️ Stopped. You can send a new message to continue.")
        elif state == "max_steps":
            self.add_note(f"⏱️ **No answer**: the run ended after {e.steps} of {self.max_steps} steps without a final "
                          f"answer. {CONTINUE_HINT}, or raise *Max steps* in the settings.")
        elif state == "error":
            error = scrub_server_paths(e.error or "an unknown error")
            self.add_note(f'<span class="ad-error">Run failed</span> {error}'
                          f"\n\n**No answer** came from this run. {CONTINUE_HINT}.")

    # ----- status line -----------------------------------------------------------------------------
    def status_text(self, now: float | None = None) -> str:
        """A quiet one-line summary: step, elapsed time and tokens (ui/chat/status_line.py)."""
        return status_line(self, now)


_Handler = Callable[[Transcript, Any], None]


# Which method shows which event, by class: renaming an event class cannot silently stop its rendering,
# and tests/ui/test_render_dispatch.py checks every class in agents/events.py is here or in NOT_SHOWN.
HANDLERS: dict[type[ev.Event], _Handler] = dict([
    ev.handles(ev.RunStarted, Transcript._on_run_started),
    ev.handles(ev.StepStarted, Transcript._on_step_started),
    ev.handles(ev.ModelRetrying, Transcript._on_model_retrying),
    ev.handles(ev.ModelTextDelta, Transcript._on_model_text_delta),
    ev.handles(ev.ModelOutput, Transcript._on_model_output),
    ev.handles(ev.PlanProposed, Transcript._on_plan_proposed),
    ev.handles(ev.CodeProposed, Transcript._on_code_proposed),
    ev.handles(ev.ToolCallProposed, Transcript._on_tool_call_proposed),
    ev.handles(ev.ToolCallResult, Transcript._on_tool_call_result),
    ev.handles(ev.ExecutionLog, Transcript._on_execution_log),
    ev.handles(ev.Observation, Transcript._on_observation),
    ev.handles(ev.ArtifactCreated, Transcript._on_artifact_created),
    ev.handles(ev.StepError, Transcript._on_step_error),
    ev.handles(ev.InjectionFlagged, Transcript._on_injection_flagged),
    ev.handles(ev.MemoryCompacted, Transcript._on_memory_compacted),
    ev.handles(ev.DecisionRequested, Transcript._on_decision_requested),
    ev.handles(ev.DecisionMade, Transcript._on_decision_made),
    ev.handles(ev.StepFinished, Transcript._on_step_finished),
    ev.handles(ev.FinalAnswer, Transcript._on_final_answer),
    ev.handles(ev.RunFinished, Transcript._on_run_finished),
])

# Events the chat deliberately does not show, each with the reason. Empty today: every event shows.
NOT_SHOWN: dict[type[ev.Event], str] = {}
