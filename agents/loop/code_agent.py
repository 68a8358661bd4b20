"""CodeAgent: the model writes Python; the sandbox runs it, keeping state between steps."""
from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents import step_events
from agents.decisions import DecisionKind, Outcome
from agents.decisions.pending import RunPaused
from agents.errors import AgentDeckError, AgentInterrupted
from agents.events import Event, SandboxRun
from agents.executor.tree_walk import remove_tree
from agents.injection import fence, warning_line
from agents.loop.answer_checking import AnswerChecking
from agents.loop.base import MultiStepAgent
from agents.loop.code_sandbox import BASE_IMPORTS, CodeAgentSandbox
from agents.loop.context import RunContext
from agents.loop.observation_images import artifact_images, image_names
from agents.loop.parsing import extract_code
from agents.loop.step_runner import show_step_error
from agents.loop.structured_code import CODE_STEP_FORMAT, StructuredReplyError, as_structured_reply, parse_code_step
from agents.loop.tool_images import record_artifact, save_tool_image
from agents.loop.tool_runner import UNSCREENED_TOOLS
from agents.memory import ActionStep
from agents.models.base import Message, Model, ModelReply
from agents.prompts import load_prompt_overlay, merge_templates, render
from agents.prompts.profiles import profile_for
from agents.shown_value import ShownValue
from agents.tooling.base import Tool

if TYPE_CHECKING:
    from agents.executor import ExecutionResult, PythonSandbox
    from agents.executor.backend import SandboxBackend, SandboxLimits

MAX_OBSERVATION_OUTPUT_CHARS = 10_000


class CodeAgent(CodeAgentSandbox, MultiStepAgent):
    """Acts by writing Python code, run in a PythonSandbox worker process."""

    prompt_kind = "code_agent"
    stop_sequences = ["Observation:", "Calling tools:"]

    def __init__(self, tools: Iterable[Tool] = (), model: Model | None = None,
                 authorized_imports: list[str] | tuple[str, ...] = (), workdir: str | os.PathLike[str] | None = None,
                 executor_timeout_s: float = 30.0, sandbox: str | SandboxBackend | None = None,
                 sandbox_limits: SandboxLimits | None = None, sandbox_pool: bool = False,
                 use_structured_outputs_internally: bool = False, answer_checks: bool = True,
                 answer_agreement: bool = False, answer_send_back: bool = False, **kwargs: Any) -> None:
        """`sandbox`: the backend the code runs on, by name (`agents.executor.backends.available()`) or as an
        object; None is `backends.DEFAULT` (local). `sandbox_limits`: the sandbox's
        limits (`executor_timeout_s` takes the place of its `timeout_s`). `sandbox_pool`: start from a sandbox
        the backend's warm pool started ahead of time (`agents/executor/pool.py`), when one is ready.
        `use_structured_outputs_internally`: ask the model for `{"thought", "code"}` JSON through the provider's
        structured output (agents/loop/structured_code.py) instead of fenced code. `answer_checks`: check the
        answers of a model whose profile asks for it (the embedded one) before they are shown
        (agents/loop/answer_checking.py). `answer_agreement`: with those checks, confirm a plain answer that passed
        them by a second, independent attempt (a model call more; off unless asked: the app asks for it).
        `answer_send_back`: with those checks, send an answer they doubt back to the model while steps remain (off
        unless asked: it made no answer of the embedded model right, see `AnswerChecking`)."""
        self.authorized_imports = sorted(set(BASE_IMPORTS) | set(authorized_imports))
        self._owns_workdir = workdir is None
        self.workdir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="agentdeck-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.executor_timeout_s = executor_timeout_s
        self.sandbox_backend = sandbox
        self.sandbox_limits = sandbox_limits
        self.sandbox_pool = sandbox_pool
        self._sandbox: PythonSandbox | None = None
        self._sandbox_lock = threading.Lock()
        #: An opaque tag the sandbox records as its owner (`SandboxSpec.owner`; the app's: a keyed hash of the saved
        #: chat), so `attach_sandbox` takes only a sandbox started for it.
        self.sandbox_owner = ""
        self.profile = profile_for(model)
        #: Each step's reply is a `{"thought", "code"}` JSON object (agents/loop/structured_code.py), asked for
        #: through the provider's response format when the model takes one, else by the prompt alone.
        self.structured = bool(use_structured_outputs_internally)
        if self.structured:
            self.stop_sequences = []  # "Observation:" may be inside the JSON's code; the object ends the reply
            overlay = load_prompt_overlay(f"{self.profile.code_prompts}_structured")
            kwargs["prompt_templates"] = merge_templates(overlay, kwargs.get("prompt_templates") or {})
        # The model's profile decides which of the given tools it is shown (none for a tiny model).
        tools = list(tools)
        self.tools_left_out = [getattr(t, "name", "") for t in tools
                               if not self.profile.keeps_tool(getattr(t, "name", ""))]
        tools = [t for t in tools if self.profile.keeps_tool(getattr(t, "name", ""))]
        super().__init__(tools=tools, model=model, **kwargs)
        self.answer_checks = AnswerChecking(self, answer_checks and self.profile.check_answers
                                            and "answer_checks" in self.prompt_templates, answer_agreement,
                                            answer_send_back)
        if self.answer_checks.enabled and self.profile.checked_max_steps:
            self.max_steps = min(self.max_steps, self.profile.checked_max_steps)

    # -- answer checks of a small model (agents/loop/answer_checking.py) -----------------------------
    def answer_observer(self, emit: Callable[[Event], None], top_level: bool = True) -> Callable[[Event], None]:
        return self.answer_checks.observer(emit, top_level)

    def step_cap(self) -> int | None:
        """A checked small model's runs stop after its profile's few steps, even when a run asks for more."""
        return self.profile.checked_max_steps if self.answer_checks.enabled else None

    def task_for_run(self, task: str) -> str:
        return self.answer_checks.task_for_run(task)

    def run_refusal(self) -> AgentDeckError | None:
        return self.answer_checks.refusal()

    def check_answer(self, value: Any, run: RunContext | None = None) -> dict[str, Any] | None:
        return self.answer_checks.check(value, run)

    def answer_problem(self, value: Any) -> str | None:
        return self.answer_checks.answer_problem(value)

    def _prompt_kind(self) -> str:
        return self.profile.code_prompts

    def prompt_variables(self, run: RunContext | None = None) -> dict[str, Any]:
        return {**super().prompt_variables(run),
                "authorized_imports": self.profile.prompt_imports(self.authorized_imports)}

    def prompt_for_step(self, context: RunContext) -> list[Message]:
        """A profile without `earlier_runs` (the tiny one) is sent the system prompt, its examples and this run
        only: a 135M model copied an earlier answer, right or wrong, into the next one. The memory keeps every
        step (saved chats, exports, the sandbox's variables); a compacted prompt that no longer holds the run's
        first message is sent whole."""
        messages = self.memory.messages
        if self.profile.earlier_runs or context.first_message is None:
            return messages
        head = len(self.memory.system_prompt.messages)
        for index in range(len(messages) - 1, head - 1, -1):
            if messages[index] is context.first_message:
                return messages[:head] + messages[index:]
        return messages

    def prompt_examples(self, task: str = "") -> list[Message]:
        """The prompt's worked examples; for structured steps their replies are written as JSON objects."""
        examples = super().prompt_examples(task)
        if not self.structured:
            return examples
        thought = str(self.prompt_templates.get("example_thought") or "")
        return [{**m, "content": as_structured_reply(str(m["content"]), thought)} if m.get("role") == "assistant"
                else m for m in examples]

    def step_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """Structured steps ask for the `{"thought", "code"}` object; a reply prefix or a guided name would
        break it, so they are left out."""
        if not self.structured:
            return options
        kept = {k: v for k, v in options.items() if k not in ("response_prefix", "name_choice")}
        if getattr(self.model, "supports_structured_output", False):
            kept["response_format"] = CODE_STEP_FORMAT
        return kept

    def code_preamble(self) -> str:
        """Lines run before each code block when the prompt file says so (`code_preamble`): the tiny prompt's
        replies are one `final_answer(...)` line that relies on `math` and `pd` being imported."""
        if "code_preamble" not in self.prompt_templates:
            return ""
        return render(self.prompt_templates, "code_preamble", **self.prompt_variables())

    def _reset(self) -> None:
        super()._reset()
        if self._sandbox is not None:
            self._sandbox.reset()

    def _hand_over_arguments(self, task: str, additional_args: dict[str, Any]) -> str:
        self.sandbox.send_variables(additional_args)
        names = ", ".join(additional_args)
        return f"{task}\n\nThese variables are already defined in your Python session: {names}."

    def interrupt(self) -> None:
        super().interrupt()
        if self._sandbox is not None:
            self._sandbox.interrupt()

    def close(self) -> None:
        super().close()
        with self._sandbox_lock:
            if self._sandbox is not None:
                self._sandbox.close()
                self._sandbox = None
        if self._owns_workdir:
            remove_tree(str(self.workdir))

    # -- acting ----------------------------------------------------------------------------------
    def act(self, step: ActionStep, reply: ModelReply, context: RunContext) -> None:
        fields = context.event_fields()
        code = self._code_of(step, reply, context)
        if code is None:
            return
        preamble = self.code_preamble()
        if preamble:
            code = f"{preamble}\n{code}"  # shown and recorded as run, so a restored chat re-runs it too
        step.code = code
        context.emit(step_events.code_proposed(step, fields))
        decision = context.ask(DecisionKind.CODE, {"code": code})
        if decision is not None and decision.outcome is Outcome.REJECT:
            step.error = render(self.prompt_templates, "observations.rejected_by_user", reason=decision.reason)
            show_step_error(step, "RejectedByUser", decision.reason or "Rejected.", context)
            return
        if decision is not None and decision.outcome is Outcome.EDIT:
            code = step.code = decision.edited
        context.check_interrupt()
        result = self._execute_code(code, step, context)
        paused = context.pause_due()
        if paused is not None:  # a call in the code asked for a decision (pause mode): the step ends unshown
            raise RunPaused(paused)
        for artifact in result.artifacts:
            self._emit_artifact(artifact, step, context)
        for number, shot in enumerate(context.tool_images, 1):  # screenshots tools returned: shown in the chat
            save_tool_image(self.workdir, shot, number, step, context)
        if context.interrupt_flag.is_set():
            step.error = "The run was stopped by the user while the code was running."
            if result.state_lost and result.error:  # the code did not stop in time: the worker was restarted
                error, error_type = self._lost_state_error(result)
                step.error += " " + error  # the model and the person learn that the variables are gone
                show_step_error(step, error_type, error, context)
            raise AgentInterrupted(step.error)
        if result.untrusted:  # the worker broke the protocol: nothing it sent is believed, its state is gone
            logs_shown, _ = self._screen_execution(step, "", context)
            step.observations = render(self.prompt_templates, "execution_observation", logs=logs_shown,
                                       has_output=False, output="")
            step.error, error_type = self._lost_state_error(result)
            show_step_error(step, error_type, step.error, context)
            return
        image_notes = self._observe_images(result, context)
        has_output = result.output is not None and not result.is_final_answer
        output_text = _shorten(value_text(result)) if has_output else ""
        if has_output:
            step.last_value = shown_value(result)
        logs_shown, output_text = self._screen_execution(step, output_text, context)
        step.observations = render(self.prompt_templates, "execution_observation", logs=logs_shown,
                                   has_output=has_output, output=output_text)
        if image_notes:
            step.observations = "\n".join([step.observations, *image_notes])
        if result.error:
            step.error = result.error  # the model is told where the code stopped (and, if rejected, why)
            if not _shown_by_its_last_call(result, context):  # the failed or rejected call already shows why
                show_step_error(step, "ExecutionError", result.error, context)
            return
        if result.is_final_answer:
            step.is_final_answer = True
            step.action_output = result.output
            if result.table is not None:  # a data frame: the chat shows its table, as a step's last expression's
                step.answer_value = shown_value(result)

    def _code_of(self, step: ActionStep, reply: ModelReply, context: RunContext) -> str | None:
        """The code of the reply (a fenced block, or the structured object's `code`); None, with the step's error
        told to the model and shown, when there is none: the run goes on to the next step."""
        if not self.structured:
            code = extract_code(reply.content)
            if code is None:
                step.error = render(self.prompt_templates, "parse_error")
                show_step_error(step, "ParsingError", "The reply held no code block.", context)
            return code
        try:
            return parse_code_step(reply.content).code
        except StructuredReplyError as exc:
            step.error = render(self.prompt_templates, "structured_parse_error", error=str(exc))
            show_step_error(step, "ParsingError", f"The reply was not the expected JSON object: {exc}.", context)
            return None

    def _observe_images(self, result: ExecutionResult, context: RunContext) -> list[str]:
        """Give the step's new images (charts saved or shown) to a vision model with the next step; the notes
        say which were refused (too large, a bomb, not an image)."""
        shots, context.tool_images = context.tool_images, []
        if not self.sends_observation_images():  # a text-only model still learns which charts the step made
            unseen = image_names(self.workdir, list(result.artifacts))
            return [render(self.prompt_templates, "observations.images_not_seen", names=", ".join(unseen))] \
                if unseen else []
        if not (result.artifacts or shots):
            return []
        budget = self.observation_image_budget
        images, notes = artifact_images(self.workdir, list(result.artifacts), budget, self.image_room(context))
        context.observation_images.extend(images)
        for shot in shots:  # screenshots the tools returned (web_browser), after the step's own images
            if len(context.observation_images) >= budget.max_images:
                notes.append(f"A tool's screenshot: not shown to you (at most {budget.max_images} images per step).")
            elif len(shot.data) > budget.limits.max_bytes or len(shot.data_url()) > self.image_room(context):
                notes.append("A tool's screenshot: not shown to you (this conversation holds as many images as "
                             "it may).")
            else:
                context.observation_images.append(shot)
        return notes

    def _lost_state_error(self, result: ExecutionResult) -> tuple[str, str]:
        """What the model and the person are told of a run whose worker was replaced, and the error's type: one
        that broke the protocol (`untrusted`) is said to have misbehaved, its variables reset."""
        if result.untrusted:
            return render(self.prompt_templates, "observations.sandbox_misbehaved", error=result.error or ""), \
                "SandboxMisbehaved"
        return result.error or "", result.error_type or "InterruptedError"

    def _execute_code(self, code: str, step: ActionStep, context: RunContext) -> ExecutionResult:
        """Run the code, streaming its output as ExecutionLog events while it runs.

        The run's stop flag goes to the sandbox as `cancel`, so a Stop pressed while the worker is still
        starting is not lost."""
        fields = context.event_fields()
        sandbox = self.sandbox
        streamed: list[str] = []

        def stream_log(text: str) -> None:
            streamed.append(text)
            context.emit(step_events.execution_log(text, fields))

        context.log_position = lambda: sum(map(len, streamed))  # where a tool call falls in the logs
        started = time.perf_counter()
        result = sandbox.run(code, on_log=stream_log, cancel=context.interrupt_flag,
                             tools=self.runner.as_callables(context))
        step.execution_duration_s = time.perf_counter() - started
        step.logs = result.logs or ""
        already_sent = "".join(streamed)
        rest = step.logs[len(already_sent):] if step.logs.startswith(already_sent) else step.logs
        if rest:
            context.emit(step_events.execution_log(rest, fields))
        backend = str(getattr(getattr(sandbox, "backend", None), "name", "local"))  # the backend's name, e.g. docker
        context.emit(SandboxRun(**fields, backend=backend,
                                duration_s=step.execution_duration_s, state_lost=result.state_lost,
                                untrusted=result.untrusted, error_type=result.error_type))
        return result

    def _screen_execution(self, step: ActionStep, output_text: str, context: RunContext) -> tuple[str, str]:
        """Record the tools the code called; if any, their output may be in the logs: fence logs and output
        as data, with a warning line for each call whose output looked like instructions (agents/injection.py)."""
        step.tool_calls = list(context.tool_calls)
        if all(call.name in UNSCREENED_TOOLS for call in step.tool_calls):
            return step.logs, output_text
        source = "execution logs (contains tool output)"
        logs = fence(step.logs, source) if step.logs else ""
        output_text = fence(output_text, source) if output_text else output_text
        warnings = dict.fromkeys(warning_line(f"tool:{c.name}") for c in step.tool_calls
                                 if c.id in context.tool_findings)
        return "\n".join([*warnings, logs]).strip(), output_text

    def _emit_artifact(self, artifact: Any, step: ActionStep, context: RunContext) -> None:
        relative = str(getattr(artifact, "path", artifact))
        if os.path.isabs(relative):
            relative = os.path.relpath(relative, self.workdir)
        record_artifact(self.workdir, relative, int(getattr(artifact, "size", None) or 0), step, context)


def _shown_by_its_last_call(result: ExecutionResult, context: RunContext) -> bool:
    """Whether the code stopped only because its last tool call failed or was rejected (the error the sandbox
    raised in the code for it went uncaught): the call shows that already, with the tool's message or the
    person's reason, so a step error saying it again would show the failure twice."""
    if result.error_type != "ToolCallError" or not context.call_records:
        return False
    last, error = context.call_records[-1], result.error or ""
    if last.rejected:
        return f"ToolCallError: tool '{last.name}' failed: Rejected: " in error
    return last.is_error and bool(last.output) and f"ToolCallError: tool '{last.name}' failed: " in error \
        and last.output in error


def shown_value(result: ExecutionResult) -> dict[str, Any] | None:
    """The value as the chat shows it (`ShownValue.as_dict`), checked again and capped (agents/shown_value.py):
    the worker's table is untrusted data."""
    shown = ShownValue.from_data({"type": result.output_type, "text": value_text(result), "table": result.table})
    return shown.as_dict() if shown is not None else None


def value_text(result: ExecutionResult) -> str:
    """The last expression's value as the model and the person read it: an object's repr (a data frame's table)
    and a string with line breaks as their text, with real line breaks (repr'd again, a frame was one line of
    literal `\\n`); other plain data as its repr, so a string still reads as one ('abc')."""
    output = result.output
    if isinstance(output, str) and (result.output_type != "str" or "\n" in output):
        return output
    return repr(output)


def _shorten(text: str, limit: int = MAX_OBSERVATION_OUTPUT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters cut]"
