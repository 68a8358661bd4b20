"""Agent events -> chat nodes: how each event of a run shows in the chat, and the run's status line.

`Transcript` is the chat tree (ui/chat/tree.py) fed with agent events, dispatched by class (HANDLERS, the
one table). Each agent step is a collapsible "thought"; its code, logs, errors and tool calls are its children
(ui/chat/render_execution.py), and a managed agent's steps hang under the tool call that started them
(ui/chat/step_tree.py); a person's decisions: ui/chat/render_decisions.py. Here: the runs and their steps, the
model's text and plans, final answers (plain assistant messages), and the run's progress (step, elapsed time,
tokens, what a paused run waits for) for the status line. Nothing here imports Gradio: it is unit-tested on
hand-made events.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agents import events as ev
from agents.answer_checks.marks import answer_mark
from agents.injection import detect_injection
from agents.shown_value import ShownValue
from ui.chat.file_links import FileLinker
from ui.chat.formatting import (
    IMAGE_EXTENSIONS,
    clip,
    fence,
    format_tokens,
    format_value,
    scrub_server_paths,
    thought_without_code,
)
from ui.chat.render_decisions import WAITING_MARK, DecisionRendering
from ui.chat.render_execution import ExecutionRendering
from ui.chat.status_line import status_line
from ui.chat.step_output import StepRecord, step_preview, step_summary
from ui.chat.tree import Node

SECOND_ATTEMPT_TITLE = "🔁 A second attempt, to check the answer"

if TYPE_CHECKING:  # published_files imports Gradio; the chat does not
    from ui.chat.published_files import Published

CONTINUE_HINT = "Send **continue** to let the agent go on from where it stopped (it keeps its steps and variables)"
NO_ANSWER_GUESS = ("⏱️ **Not a final answer**: the agent ran out of steps. Asked for its best guess from the steps "
                   "so far, the model wrote (nothing here was checked by running code):")
FOLLOW_UP_REFUSED = "FollowUpUnsupportedError:"  # the demo model cannot use the earlier answer: said plainly
NO_GUESS = ("⏱️ **No answer**: the agent ran out of steps, and asked for its best guess, the model wrote no answer "
            "(only errors or code).")


class Transcript(ExecutionRendering, DecisionRendering):
    """The chat of one session, fed with agent events and person-side notes."""

    def __init__(self, workdir: str | None = None, publish: Callable[[str], Published] | None = None) -> None:
        super().__init__(publish)
        self.workdir = workdir
        self.decision_nodes: dict[str, Node] = {}
        self.requests: dict[str, ev.DecisionRequested] = {}  # by request id: what each decision was about
        self.top_run_id: str | None = None
        self.current_step = 0  # the current run's step, numbered within the run (as its step titles are)
        self.out_of_steps = False  # the current run used all its steps: its answer is only a best guess
        self.max_steps = 0
        self.run_started = 0.0
        self.run_tokens: Any = None
        self.title_tokens: Any = None  # what asking the model for the chat's title took (ui/session/title_job.py)
        self.last_status = ""
        self.finished: ev.RunFinished | None = None
        self.waiting: str | None = None  # the kind of decision the run waits for
        self.retrying: ev.ModelRetrying | None = None  # the model call waiting to be retried, if any
        self.answer_check: ev.AnswerCheck | None = None  # the app's checks of the last answer, if it made any

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
            self.answer_check = None
            self.title_tokens = None  # a title request belongs to the run before
        elif e.parent_id in self.call_nodes:
            node = self.call_nodes[e.parent_id]
            node.parts["agent"] = f"Managed agent **{e.agent_name}** is working on: {clip(e.task, 500)}"

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
        self._put(node, parent=parent)  # a resumed run's paused step starts again in its place
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
        if node.id in self._steps:
            self._steps[node.id].tokens = e.token_usage.total_tokens or 0

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

    def _on_memory_compacted(self, e: ev.MemoryCompacted) -> None:
        self.add_note(f"Older steps were summarised: {e.tokens_before:,} → {e.tokens_after:,} tokens "
                      f"({e.steps_folded} steps folded).", title="🗜️ Memory compacted", status="done")

    def _on_second_attempt_started(self, e: ev.SecondAttemptStarted) -> None:
        """The answer waits for a second, independent attempt (agents/loop/second_attempt.py): say so."""
        if e.parent_id is None:
            text = "The model is asked the question again, afresh, to see whether it gives the same answer."
            self._add(Node(f"second-attempt:{e.run_id}", title=SECOND_ATTEMPT_TITLE, status="pending",
                           parts={"text": text}))

    def _on_second_attempt_finished(self, e: ev.SecondAttemptFinished) -> None:
        node = self.by_id.get(f"second-attempt:{e.run_id}")
        if node is None or e.parent_id is not None:
            return
        if not e.answered:
            text = f"It gave no answer ({clip(e.error, 200) or 'none'})."
        else:
            value = clip(format_value(e.value), 300)
            text = f"It gave {value}: {'the same answer' if e.agrees else 'not the same answer'}."
        if e.code:
            text += "\n\n" + fence(clip(e.code, 2000), "python")
        node.parts["text"] = text
        node.status, node.duration = "done", round(e.duration_s, 2)

    def _on_step_finished(self, e: ev.StepFinished) -> None:
        node = self._step_node(e)
        if node is None:
            return
        node.duration = round(e.duration_s, 2)
        tokens = format_tokens(e.token_usage)
        if tokens:
            node.log = tokens
        if e.step_type == "action":
            self._say_what_it_did(node, e.token_usage.total_tokens if tokens else 0)
        self._finish_step(node)

    def _say_what_it_did(self, node: Node, tokens: int) -> None:
        """A folded action step's title says what it did, its tokens after: the same whether the step ended
        (StepFinished) or its run did first (a Stop), as a reopened chat, which replays the step's end, shows it."""
        record = self._steps.get(node.id)
        what = step_summary(node.parts.get("thought", ""), record.code) if record is not None else ""
        if what:
            node.log = f"{what} · {tokens:,} tokens" if tokens else what

    def _finish_step(self, node: Node) -> None:
        """Fold the step (Gradio closes a thought whose status is done) and show its key output under it."""
        node.status = "done"
        self._close_children(node)
        record = self._steps.pop(node.id, None)
        if record is None:
            return
        title = (node.title or "the step").replace(" ⚠️", "").replace(WAITING_MARK, "")
        saved = FileLinker(self.workdir, self.publish).link(node.parts["files"]) if "files" in node.parts else ""
        shown = step_preview(title, record, saved)
        if shown.whole and record.logs.strip():  # read once, below the step (see ui/chat/step_output.py)
            node.parts.pop("logs", None)
        if shown.text:
            preview = Node(f"{node.id}/output", parts={"text": shown.text})
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
            if e.value is None:  # the model's last reply was no guess (error text, code): nothing to quote
                self._add(Node(self._new_id("guess"), parts={"text": NO_GUESS}))
                return
            guess = "\n".join("> " + line for line in format_value(e.value).splitlines())
            self._add(Node(self._new_id("guess"), parts={"text": NO_ANSWER_GUESS + "\n\n" + guess}))
            return
        self.answer_check = e.check
        if self._answer_table(e):
            return
        text = format_value(e.value)
        if isinstance(e.value, str):
            text = FileLinker(self.workdir, self.publish).link(text)
        if e.check is not None:
            text += "\n\n" + answer_mark(e.check)
        self._add(Node(self._new_id("answer"), parts={"text": text}))
        value = e.value
        if isinstance(value, str) and os.path.splitext(value)[1].lower() in IMAGE_EXTENSIONS:
            path = value if os.path.isabs(value) or not self.workdir else os.path.join(self.workdir, value)
            shown = self.shown_file_if_there(path)  # not shown again if this run did
            if shown is not None and ("run", e.run_id, shown[1] or path) not in self._images_shown:
                self._add_image(shown, os.path.basename(path), e)

    def _answer_table(self, e: ev.FinalAnswer) -> bool:
        """An answer that is a data frame, as Gradio's table (sortable, scrolling), as a step's last expression
        shows (ui/chat/value_table.py), with the answer's mark under it; False for any other answer."""
        value = ShownValue.from_data(e.table)
        if value is None or not value.is_table:
            return False
        from ui.chat.value_table import answer_label, table_message

        self._add(Node(self._new_id("answer"), file=table_message(value, answer_label(value), answer=True)))
        if e.check is not None:
            self._add(Node(self._new_id("answer"), parts={"text": answer_mark(e.check)}))
        return True

    def _on_run_finished(self, e: ev.RunFinished) -> None:
        if e.parent_id is not None or e.state == "paused":  # a paused run waits for its decision: it goes on
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
                    if node.id.endswith(":action"):  # stopped mid-step: no StepFinished came
                        self._say_what_it_did(node, self._steps[node.id].tokens if node.id in self._steps else 0)
                    self._finish_step(node)
                node.status = "done"
        state = str(getattr(e.state, "value", e.state))
        if state == "interrupted":
            self.add_note("⏹️ Stopped. You can send a new message to continue.")
        elif state == "max_steps":
            self.add_note(f"⏱️ **No answer**: the run ended after {e.steps} of {self.max_steps} steps without a final "
                          f"answer. {CONTINUE_HINT}, or raise *Max steps* in the settings.")
        elif state == "error" and (e.error or "").startswith(FOLLOW_UP_REFUSED):
            self.add_note("⚠️ " + (e.error or "")[len(FOLLOW_UP_REFUSED):].strip())
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
    ev.handles(ev.SecondAttemptStarted, Transcript._on_second_attempt_started),
    ev.handles(ev.SecondAttemptFinished, Transcript._on_second_attempt_finished),
    ev.handles(ev.FinalAnswer, Transcript._on_final_answer),
    ev.handles(ev.RunFinished, Transcript._on_run_finished),
])

# Events the chat deliberately does not show, each with the reason.
NOT_SHOWN: dict[type[ev.Event], str] = {
    ev.SandboxRun: "how the sandbox ran the code, for traces and metrics; its output and errors show as they come",
}
