"""The mechanics of one step: calling the model with streaming, planning, acting, and the max-steps answer.

Kept apart from `base.py` (run orchestration) so each file holds one concept. Mixed into MultiStepAgent.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from agents.decisions import DecisionKind, Outcome
from agents.errors import AgentInterrupted
from agents.events import (
    ModelOutput,
    ModelRetrying,
    ModelTextDelta,
    Observation,
    PlanProposed,
    StepError,
    StepFinished,
    StepStarted,
)
from agents.loop.context import RunContext
from agents.loop.edits import apply_edits, edit_notes
from agents.loop.model_reader import ModelStreamReader
from agents.memory import ActionStep, PlanningStep
from agents.memory.steps import PromptSnapshot
from agents.models.base import Message, ModelReply
from agents.prompts import render

if TYPE_CHECKING:
    from agents.loop.base import MultiStepAgent

_END_PLAN = "<end_plan>"


class StepRunner:
    """Step mechanics; relies on the attributes MultiStepAgent sets up."""

    def _call_model(self: MultiStepAgent, messages: list[Message], context: RunContext,
                    stop_sequences: list[str] | None = None, tools: list[dict] | None = None,
                    **options: Any) -> tuple[ModelReply, float]:
        """Stream the model's reply as text deltas; return the assembled reply and the time it took.

        The reply is read in a helper thread (agents/loop/model_reader.py) so that Stop takes effect
        within a fraction of a second even when the provider stalls or asks to wait before a retry.
        """
        started = time.perf_counter()
        reply: ModelReply | None = None
        pieces: list[str] = []
        fields = context.event_fields()
        reader = ModelStreamReader(
            lambda: self.model.generate_stream(messages, stop_sequences=stop_sequences, tools=tools, **options),
            name=f"model-{self.name or type(self).__name__}")
        try:
            for delta in reader.deltas(context.interrupt_flag.is_set):
                if delta.retry is not None:
                    notice = delta.retry
                    if notice.discarded_text:
                        pieces.clear()  # the call starts again from scratch
                    context.emit(ModelRetrying(**fields, reason=notice.reason, attempt=notice.attempt,
                                               max_retries=notice.max_retries, wait_s=notice.wait_s,
                                               retry_after_s=notice.retry_after_s,
                                               discarded_text=notice.discarded_text))
                if delta.content:
                    pieces.append(delta.content)
                    context.emit(ModelTextDelta(**fields, text=delta.content))
                if delta.reply is not None:
                    reply = delta.reply
        finally:
            reader.close()
        if reply is None:
            reply = ModelReply(content="".join(pieces))
        duration = time.perf_counter() - started
        context.emit(ModelOutput(**fields, text=reply.content, token_usage=reply.token_usage, duration_s=duration))
        return reply, duration

    # -- planning --------------------------------------------------------------------------------
    def _planning_step(self: MultiStepAgent, task: str, context: RunContext, is_update: bool,
                       remaining_steps: int) -> PlanningStep:
        fields = context.event_fields()
        context.emit(StepStarted(**fields, step_type="planning"))
        step = PlanningStep(step_number=context.step, is_update=is_update)
        step.timing.start_time = time.time()
        templates = self.prompt_templates
        variables = self._prompt_variables()
        if is_update:
            self.compactor.maybe_compact(self, context)
            messages = ([{"role": "system", "content": render(templates, "planning.update_plan_pre", task=task)}]
                        + self.memory.conversation
                        + [{"role": "user", "content": render(templates, "planning.update_plan_post",
                                                              remaining_steps=remaining_steps)}])
        else:
            messages = [{"role": "user", "content": render(templates, "planning.initial_plan", task=task, **variables)}]
        reply, _ = self._call_model(messages, context, stop_sequences=[_END_PLAN])
        plan = reply.content.replace(_END_PLAN, "").strip()
        step.model_output, step.token_usage = reply.content, reply.token_usage
        context.emit(PlanProposed(**fields, plan=plan, is_update=is_update))
        decision = self.broker.ask(DecisionKind.PLAN, {"plan": plan}, context)
        plan_text = render(templates, "planning.plan_message", plan=plan)
        step.decisions = context.take_decisions()
        if decision is not None:
            if decision.outcome is Outcome.EDIT:
                plan, step.edited_by_user = decision.edited, True
                plan_text = render(templates, "planning.plan_message", plan=plan)
            elif decision.outcome is Outcome.REJECT:
                plan_text += "\n\n" + render(templates, "observations.rejected_by_user", reason=decision.reason)
        step.plan = plan
        proceed = render(templates, "planning.proceed")
        if step.edited_by_user:  # the model is told the plan it follows is the person's version
            proceed = render(templates, "planning.plan_edited_by_user") + "\n" + proceed
        step.messages = [{"role": "assistant", "content": plan_text}, {"role": "user", "content": proceed}]
        step.timing.end_time = time.time()
        self.memory.add_step(step)
        self.step_callbacks.fire(step, self)
        context.emit(StepFinished(**fields, step_type="planning", duration_s=step.timing.duration_s,
                                  token_usage=step.token_usage))
        return step

    # -- acting ----------------------------------------------------------------------------------
    def _action_step(self: MultiStepAgent, context: RunContext) -> tuple[bool, Any]:
        fields = context.event_fields()
        context.emit(StepStarted(**fields, step_type="action"))
        step = ActionStep(step_number=context.step, run_id=context.run_id)
        step.timing.start_time = time.time()
        self.compactor.maybe_compact(self, context)  # before reading the prompt: compaction swaps it
        messages = self.memory.messages
        step.model_input_messages = PromptSnapshot(messages)
        try:
            reply, step.model_duration_s = self._call_model(
                messages, context, stop_sequences=self.stop_sequences or None,
                tools=self._native_tool_schemas(), **self._reply_options(),
            )
            step.model_output, step.token_usage = reply.content, reply.token_usage
            self._act(step, reply, context)
            if step.is_final_answer:
                self._check_final_answer(step, context)
        except AgentInterrupted:
            step.error = step.error or "The run was stopped by the user."
            raise
        except Exception as exc:
            step.error = step.error or f"{type(exc).__name__}: {exc}"
            raise
        finally:
            step.timing.end_time = time.time()
            step.decisions = context.take_decisions()
            apply_edits(step)
            step.messages = self._step_messages(step)
            context.emit(Observation(**fields, text=step.messages[-1]["content"]))
            self.memory.add_step(step)
            self.step_callbacks.fire(step, self)
            context.emit(StepFinished(**fields, step_type="action", duration_s=step.timing.duration_s,
                                      token_usage=step.token_usage))
        return step.is_final_answer, step.action_output

    def _native_tool_schemas(self) -> list[dict] | None:
        return None

    def _reply_options(self: MultiStepAgent) -> dict[str, Any]:
        """Per-call options from the prompt file: `response_prefix`, the start of every action reply, for
        adapters that can continue a reply (local models); others never get it."""
        prefix = self.prompt_templates.get("response_prefix")
        if prefix and getattr(self.model, "supports_response_prefix", False):
            return {"response_prefix": str(prefix)}
        return {}

    def _act(self, step: ActionStep, reply: ModelReply, context: RunContext) -> None:
        raise NotImplementedError

    def _step_messages(self: MultiStepAgent, step: ActionStep) -> list[Message]:
        """The messages this step adds to the prompt: the model's reply as it wrote it, then what came of it
        (first what a person changed before it ran, agents/loop/edits.py)."""
        messages: list[Message] = [{"role": "assistant", "content": step.model_output}]
        if step.error:
            text = render(self.prompt_templates, "observations.error", error=step.error)
            if step.observations:
                text = render(self.prompt_templates, "observations.observation", observation=step.observations) + "\n" + text
        else:
            text = render(self.prompt_templates, "observations.observation", observation=step.observations)
        messages.append({"role": "user", "content": "\n\n".join([*edit_notes(self.prompt_templates, step), text])})
        return messages

    def _check_final_answer(self: MultiStepAgent, step: ActionStep, context: RunContext) -> None:
        """Run the final-answer checks; a failing check turns the answer into an error the model sees."""
        for check in self.final_answer_checks:
            check_name = getattr(check, "__name__", type(check).__name__)
            try:
                passed, reason = bool(check(step.action_output, self.memory)), f"check {check_name!r} returned False"
            except Exception as exc:
                passed, reason = False, f"check {check_name!r} failed: {exc}"
            if not passed:
                step.is_final_answer = False
                step.error = render(self.prompt_templates, "observations.final_answer_rejected", reason=reason)
                context.emit(StepError(**context.event_fields(), error_type="FinalAnswerCheckFailed", message=reason))
                return

    def _answer_after_max_steps(self: MultiStepAgent, task: str, context: RunContext) -> Any:
        """One last model call asking for the best answer from what the memory holds."""
        templates = self.prompt_templates
        self.compactor.maybe_compact(self, context)
        messages = ([{"role": "system", "content": render(templates, "final_answer.pre_messages")}]
                    + self.memory.conversation
                    + [{"role": "user", "content": render(templates, "final_answer.post_messages", task=task)}])
        context.emit(StepStarted(**context.event_fields(), step_type="final"))
        reply, duration = self._call_model(messages, context)
        context.emit(StepFinished(**context.event_fields(), step_type="final", duration_s=duration,
                                  token_usage=reply.token_usage))
        return reply.content
