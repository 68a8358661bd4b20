"""StepRunner: one run of an agent, step by step. It owns the run's state (the RunContext, where the run's
steps start in memory, when it started, the step count) and the mechanics of each step: calling the model
with streaming, planning, acting, final-answer checks, compaction, the max-steps answer.
A step's events are made from its record by agents/step_events/, the mapping a reopened chat replays.

Composition, not a mixin: the agent (agents/loop/base.py) builds one per run and hands it itself, seen
through `StepAgent` (agents/loop/step_agent.py), a narrow view; what a run needs travels in its RunContext, passed
explicitly. Planning, compaction and the max-steps guess: agents/loop/planning_steps.py.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from agents import step_events
from agents.decisions import DecisionKind, DecisionRequest
from agents.decisions.pending import PendingDecision, RunPaused, policy_record
from agents.errors import AgentDeckError, AgentInterrupted, ConfigurationError, RunBudgetExceededError
from agents.loop.context import RunContext
from agents.loop.edits import apply_edits, edit_notes
from agents.loop.model_call import ModelCall, Steps, drive
from agents.loop.observation_images import observation_message
from agents.loop.planning_steps import PlanningSteps
from agents.loop.result import RunResult, RunState
from agents.loop.step_agent import StepAgent
from agents.memory import ActionStep, FinalAnswerStep, PlanningStep, TaskStep
from agents.memory.codec import json_safe
from agents.memory.memory import STOPPED_STEP
from agents.memory.steps import PromptSnapshot
from agents.models.async_remote import agenerate_stream, supports_async
from agents.models.base import Message, ModelReply, TokenUsage, ToolCall
from agents.prompts import render
from agents.prompts.profiles import name_choice_for


class StepRunner(PlanningSteps):
    """One run: `execute(task)` records the task, runs the steps and reports the result."""

    def __init__(self, agent: StepAgent, run: RunContext, last_step_number: int, started: float) -> None:
        self.agent = agent
        self.run = run
        #: The conversation's latest step number; this run's steps are numbered after it.
        self.last_step_number = last_step_number
        self.started = started
        #: Where this run's steps start in the memory (a history step, when given, is the run's first).
        self.first_step_index = len(agent.memory.steps)
        self.task = ""
        #: How many steps this run had done before the current one (a pending decision records it).
        self.steps_done = 0
        #: A resumed run's time before its pause (the wait for the person not counted), and the paused step's
        #: model time: the run's figures are the whole run's, as if it had never paused.
        self.earlier_s = 0.0
        self.resumed_model_s = 0.0

    # -- the run -----------------------------------------------------------------------------------
    def execute(self, task: str, task_message: Message | None = None) -> RunResult:
        """Record the task, run the steps until an answer, Stop, an error or the step limit; never raises for
        those (the result says what happened, with the exception that ended it). The model calls are made in
        this thread; `execute_steps` is the same run for a driver that serves them elsewhere."""
        return drive(self.execute_steps(task, task_message))

    def execute_steps(self, task: str, task_message: Message | None = None) -> Steps[RunResult]:
        """`execute` as a generator that yields each model call the run waits for (agents/loop/model_call.py)."""
        agent, run = self.agent, self.run
        self.task = task
        message = task_message or {"role": "user", "content": render(agent.prompt_templates, "task", task=task)}
        task_step = TaskStep(task=task, run_id=run.run_id, agent_name=agent.name or type(agent).__name__,
                             model_id=getattr(agent.model, "model_id", "model"), max_steps=run.max_steps,
                             steps_before=self.last_step_number, messages=[message])
        agent.memory.add_step(task_step)
        run.emit(step_events.run_started(task_step, run.event_fields()))
        return (yield from self._run_to_end(task_step, lambda: self._steps(task)))

    def resume(self, pending: PendingDecision) -> RunResult:
        """Carry on the run that ended at `pending` (its RunContext holds the granted decision): the paused step
        is acted again from its recorded reply, then the run goes on as it would have."""
        return drive(self.resume_steps(pending))

    def resume_steps(self, pending: PendingDecision) -> Steps[RunResult]:
        """`resume` as a generator that yields each model call (see `execute_steps`)."""
        agent = self.agent
        task_step = next((step for step in reversed(agent.memory.steps)
                          if isinstance(step, TaskStep) and step.run_id == pending.run_id), None)
        if task_step is None:
            raise ConfigurationError("The paused run's task is not in this memory; it cannot be resumed.")
        self.first_step_index = agent.memory.steps.index(task_step)
        self.task = task_step.task
        self.last_step_number = pending.step_number - 1
        self.earlier_s, self.resumed_model_s = task_step.duration_s, pending.reply_model_s
        reply = ModelReply(content=pending.reply_content, tool_calls=[
            ToolCall(name=str(c.get("name", "")), arguments=dict(c.get("arguments") or {}), id=str(c.get("id", "")))
            for c in pending.reply_tool_calls if isinstance(c, dict)],
            token_usage=TokenUsage(pending.reply_input_tokens, pending.reply_output_tokens))
        if pending.kind == DecisionKind.PLAN.value:  # a plan review: the plan is reviewed again, then steps go on
            return (yield from self._run_to_end(task_step, lambda: self._steps(self.task, pending.steps_done,
                                                                               plan=reply)))
        return (yield from self._run_to_end(task_step, lambda: self._steps(self.task, pending.steps_done, reply)))

    def _run_to_end(self, task_step: TaskStep,
                    run_steps: Callable[[], Steps[tuple[FinalAnswerStep, RunState]]]) -> Steps[RunResult]:
        agent, run = self.agent, self.run
        state, final, error = RunState.SUCCESS, None, None
        exception: BaseException | None = None
        try:
            final, state = yield from run_steps()
        except RunPaused:
            state = RunState.PAUSED
        except AgentInterrupted:
            state = RunState.INTERRUPTED
        except (AgentDeckError, OSError) as exc:
            state, error, exception = RunState.ERROR, f"{type(exc).__name__}: {exc}", exc
        except Exception as exc:  # unexpected: keep the app alive and report it
            state, error, exception = RunState.ERROR, f"Internal error: {type(exc).__name__}: {exc}", exc
        steps = agent.memory.steps[self.first_step_index:]
        task_step.state, task_step.end_step, task_step.error = state.value, run.step, error
        task_step.duration_s = self.earlier_s + time.perf_counter() - self.started
        fields = run.event_fields()
        if final is not None:
            if state is RunState.SUCCESS:
                final.check = agent.check_answer(final.output, run)  # before the answer is shown
            agent.memory.add_step(final)
            run.emit(step_events.final_answer(final, fields))
        finished = step_events.run_finished(task_step, steps, final, fields)
        run.emit(finished)
        return RunResult(output=finished.output, state=state, run_id=run.run_id, steps=list(steps),
                         token_usage=finished.token_usage, duration_s=finished.duration_s, error=error,
                         exception=exception)

    def _steps(self, task: str, start: int = 0, resumed: ModelReply | None = None,
               plan: ModelReply | None = None) -> Steps[tuple[FinalAnswerStep, RunState]]:
        """The steps of a run (from step `start`, the first acting on the `resumed` reply of a paused run, or
        planning from the recorded `plan` of a run paused at its plan's review); returns its answer step (not
        yet in memory) and how the run ended."""
        agent, run = self.agent, self.run
        refusal = agent.run_refusal()
        if refusal is not None:
            raise refusal
        # The run's own step limit and planning interval (agents/loop/run_options.py), else the agent's.
        for steps_done in range(start, run.max_steps):
            run.check_interrupt()
            self.last_step_number += 1
            run.start_step(self.last_step_number)
            self.steps_done = steps_done
            if plan is not None or (resumed is None and run.planning_interval
                                    and steps_done % run.planning_interval == 0):
                yield from self.planning_step(task, is_update=steps_done > 0,
                                              remaining_steps=run.max_steps - steps_done, recorded=plan)
                plan = run.grant = None
            try:
                step = yield from self.action_step(resumed)
            finally:
                if resumed is not None:  # the answer was for the paused step's request: a later step asks anew
                    run.grant = None
            resumed = None
            if step.is_final_answer:
                return (FinalAnswerStep(output=step.action_output, run_id=run.run_id, answer_value=step.answer_value),
                        RunState.SUCCESS)
            self._check_token_budget()
        return (yield from self.answer_after_max_steps(task)), RunState.MAX_STEPS

    def _check_token_budget(self) -> None:
        limit = self.agent.max_tokens_per_run
        if not limit:
            return
        used = sum((getattr(s, "token_usage", None) or TokenUsage() for s in self.agent.memory.steps
                    if getattr(s, "run_id", None) == self.run.run_id), TokenUsage()).total_tokens
        if used > limit:
            raise RunBudgetExceededError(
                f"this run used {used:,} model tokens, over the budget of {limit:,} per run that "
                "the server's operator set; the steps so far are kept, and a new message continues from them.")

    # -- the model -----------------------------------------------------------------------------------
    def call_model(self, messages: list[Message], stop_sequences: list[str] | None = None,
                   tools: list[dict[str, Any]] | None = None, **options: Any) -> Steps[tuple[ModelReply, float]]:
        """Stream the model's reply as text deltas; return the assembled reply and the time it took (the
        caller records both in its step and emits the step's ModelOutput).

        The call is yielded to the run's driver (agents/loop/model_call.py): `run` reads the reply in a helper
        thread, so Stop takes effect within a fraction of a second even when the provider stalls or asks to wait
        before a retry; `arun`/`astream` await it in their event loop. Its error is raised here either way.
        """
        agent = self.agent
        model = agent.model
        call = ModelCall(
            run=self.run,
            make_stream=lambda: model.generate_stream(messages, stop_sequences=stop_sequences, tools=tools, **options),
            make_astream=(lambda: agenerate_stream(model, messages, stop_sequences=stop_sequences, tools=tools,
                                                   **options)) if supports_async(model) else None,
            thread_name=f"model-{agent.name or type(agent).__name__}")
        yield call
        return call.reply()

    def _reply_options(self) -> dict[str, Any]:
        """Per-call options from the prompt file, for adapters that can continue a reply (local models); others
        never get them. `response_prefix`: the start of every action reply. `retry_temperature`: a step after a
        failed step of the same run samples at that temperature (a greedy model retried with the same prompt
        wrote the same failing line ten times). `name_choice`: the column names of the task's uploads, which the
        reply may write after `["` (chosen by the model's likelihood, agents/models/name_choice.py)."""
        agent = self.agent
        if not getattr(agent.model, "supports_response_prefix", False):
            return {}
        options: dict[str, Any] = {}
        prefix = agent.prompt_templates.get("response_prefix")
        if prefix:
            options["response_prefix"] = str(prefix)
        choice = name_choice_for(agent.prompt_templates, self.task)
        if choice is not None:
            options["name_choice"] = choice
        temperature = agent.prompt_templates.get("retry_temperature")
        last = agent.memory.steps[-1] if agent.memory.steps else None
        if temperature and isinstance(last, ActionStep) and last.error and last.run_id == self.run.run_id:
            options.update(do_sample=True, temperature=float(temperature))
        return options

    # -- acting --------------------------------------------------------------------------------------
    def action_step(self, resumed: ModelReply | None = None) -> Steps[ActionStep]:
        """One action step: the model's reply (or, for a resumed run, the paused step's recorded one), acted on.
        In pause mode a decision request ends the step unrecorded: the memory keeps the pending decision."""
        agent, run = self.agent, self.run
        fields = run.event_fields()
        step = ActionStep(step_number=run.step, run_id=run.run_id)
        step.timing.start_time = time.time()
        agent.memory.in_progress = step  # an unconfirmed stop keeps it (AgentMemory.stopped_copy)
        run.emit(step_events.step_started(step, fields))
        self.compact()  # before reading the prompt: compaction swaps it
        messages = agent.images_in_prompt(agent.prompt_for_step(run))
        step.model_input_messages = PromptSnapshot(messages)
        reply = resumed
        if resumed is not None:
            step.model_duration_s = self.resumed_model_s
        try:
            if reply is None:
                reply, step.model_duration_s = yield from self.call_model(
                    messages, stop_sequences=agent.stop_sequences or None, tools=agent.native_tool_schemas(run),
                    **agent.step_options(self._reply_options()),
                )
            step.model_output, step.token_usage = reply.content, reply.token_usage
            run.emit(step_events.model_output(step, fields))
            answered = reply
            run.note_pending = lambda request: self._note_waiting(request, step, answered)
            agent.act(step, reply, run)
            paused = run.pause_due()  # a managed agent's: its manager's
            if paused is not None:  # asked from sandboxed code: the code caught the pause as a tool error
                raise RunPaused(paused)
            if step.is_final_answer:
                self._check_final_answer(step)
        except RunPaused as paused:
            in_code = step.code is not None and paused.request.kind is not DecisionKind.CODE
            self.record_pending(paused, step, reply, in_code=in_code)
            raise
        except AgentInterrupted:
            step.error, step.stopped = step.error or STOPPED_STEP, True
            raise
        except Exception as exc:
            step.error = step.error or f"{type(exc).__name__}: {exc}"
            raise
        finally:
            run.note_pending = None
            if run.paused is None:
                self._finish_action_step(step)
            agent.memory.in_progress = None
        return step

    def _note_waiting(self, request: DecisionRequest | None, step: ActionStep, reply: ModelReply) -> None:
        """The run's thread waits for `request` (None: it was answered): the memory holds it meanwhile."""
        if request is None:
            self.agent.memory.pending = None
            return
        in_code = step.code is not None and request.kind is not DecisionKind.CODE
        self.record_pending(RunPaused(request), step, reply, in_code=in_code)

    def record_pending(self, paused: RunPaused, step: ActionStep | PlanningStep, reply: ModelReply | None,
                        in_code: bool) -> None:
        """The run ends at `paused`: the memory keeps what the resume needs (agents/decisions/pending.py)."""
        request, reply = paused.request, reply or ModelReply(content="")
        self.agent.memory.pending = PendingDecision(
            request_id=request.id, kind=request.kind.value, payload=json_safe(request.payload),
            run_id=self.run.run_id, step_number=step.step_number, reply_content=reply.content,
            reply_tool_calls=[{"id": c.id, "name": c.name, "arguments": json_safe(c.arguments)}
                              for c in reply.tool_calls],
            reply_input_tokens=reply.token_usage.input_tokens, reply_output_tokens=reply.token_usage.output_tokens,
            reply_model_s=step.model_duration_s,
            steps_done=self.steps_done, max_steps=self.run.max_steps, planning_interval=self.run.planning_interval,
            in_code=in_code, asked_at=request.asked_at or time.time(), policy=policy_record(self.run.approval_policy),
            tools=sorted(self.run.tools) if self.run.tools is not None else None,
            earlier=[dict(record) for record in self.run.decisions])

    def _finish_action_step(self, step: ActionStep) -> None:
        """Record a finished (or failed, or stopped) action step in memory and emit its end."""
        agent, run = self.agent, self.run
        fields = run.event_fields()
        step.timing.end_time = time.time()
        step.decisions = run.take_decisions()
        step.call_records = run.take_call_records()
        written = self._reply_as_written(step)  # before the person's edits set the calls' arguments to what ran
        apply_edits(step)
        step.messages = self._step_messages(step, written)
        seen = step_events.observation(step, fields)
        if seen is not None:
            run.emit(seen)
        agent.memory.add_step(step)
        agent.step_callbacks.fire(step, agent)
        run.emit(step_events.step_finished(step, fields))

    @staticmethod
    def _reply_as_written(step: ActionStep) -> str:
        """The model's reply as it wrote it. Native tool calls are not in the reply's text: they are written
        after it, so the model sees them next."""
        if not step.native_tool_calls:
            return step.model_output
        calls = json.dumps([{"name": c.name, "arguments": c.arguments} for c in step.tool_calls], default=str)
        return (step.model_output + "\n" if step.model_output else "") + "Calling tools:\n" + calls

    def _step_messages(self, step: ActionStep, reply: str) -> list[Message]:
        """The messages this step adds to the prompt: the model's reply as it wrote it, then what came of it
        (first what a person changed before it ran, agents/loop/edits.py)."""
        templates = self.agent.prompt_templates
        messages: list[Message] = [{"role": "assistant", "content": reply}]
        if step.error:
            text = render(templates, "observations.error", error=step.error)
            if step.observations:
                text = render(templates, "observations.observation", observation=step.observations) + "\n" + text
        else:
            text = render(templates, "observations.observation", observation=step.observations)
        text = "\n\n".join([*edit_notes(templates, step), text])
        messages.append(observation_message(text, self.run.take_observation_images()))
        return messages

    def _check_final_answer(self, step: ActionStep) -> None:
        """Run the final-answer checks; a failing check turns the answer into an error the model sees."""
        for check in self.agent.final_answer_checks:
            check_name = getattr(check, "__name__", type(check).__name__)
            try:
                passed = bool(check(step.action_output, self.agent.memory))
                reason = f"check {check_name!r} returned False"
            except Exception as exc:
                passed, reason = False, f"check {check_name!r} failed: {exc}"
            if not passed:
                step.is_final_answer = False
                step.error = render(self.agent.prompt_templates, "observations.final_answer_rejected", reason=reason)
                show_step_error(step, "FinalAnswerCheckFailed", reason, self.run)
                return
        # A small model's answer the app's own checks doubt is sent back while steps remain (it may find the right
        # one); the last step's answer is kept, checked and marked (agents/loop/answer_checking.py).
        if self.steps_done + 1 < self.run.max_steps:
            problem = self.agent.answer_problem(step.action_output)
            if problem:
                step.is_final_answer = False
                step.error = render(self.agent.prompt_templates, "observations.final_answer_rejected", reason=problem)
                show_step_error(step, "AnswerDoubted", problem, self.run)


def show_step_error(step: ActionStep, error_type: str, message: str, run: RunContext) -> None:
    """Record the error the person is shown for `step` (`step.error` is what the model is told) and emit it;
    the agents' `act` calls this for the errors they find (no code, a rejection, a failed run)."""
    step.error_type, step.error_message = error_type, "" if message == step.error else message
    event = step_events.step_error(step, run.event_fields())
    if event is not None:
        run.emit(event)
