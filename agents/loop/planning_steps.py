"""The run's steps other than acting: a plan (reviewed by the person when the policy says so), the folding of older
steps when the prompt is over budget, and the one last call for a best guess when the steps ran out.

A part of `StepRunner` (agents/loop/step_runner.py) kept apart by concept; what it uses of the runner is declared
below (the runner sets the attributes and has the methods).
"""
from __future__ import annotations

import time
from typing import Any

from agents import step_events
from agents.answer_checks.best_guess import usable_guess
from agents.decisions import DecisionKind, Outcome
from agents.decisions.pending import RunPaused
from agents.loop.context import RunContext
from agents.loop.model_call import Steps
from agents.loop.step_agent import StepAgent
from agents.memory import ActionStep, FinalAnswerStep, PlanningStep, SummaryStep
from agents.models.base import Message, ModelReply
from agents.prompts import render

_END_PLAN = "<end_plan>"


class PlanningSteps:
    """`planning_step`, `compact` and `answer_after_max_steps` of a run."""

    agent: StepAgent
    run: RunContext
    resumed_model_s: float

    def call_model(self, messages: list[Message], stop_sequences: list[str] | None = None,
                   tools: list[dict[str, Any]] | None = None, **options: Any) -> Steps[tuple[ModelReply, float]]:
        raise NotImplementedError

    def record_pending(self, paused: RunPaused, step: ActionStep | PlanningStep, reply: ModelReply | None,
                       in_code: bool) -> None:
        raise NotImplementedError

    # -- compaction ----------------------------------------------------------------------------------
    def compact(self) -> None:
        """Let the compactor fold older steps when the prompt is over budget; the step callbacks may veto it."""
        agent, run = self.agent, self.run
        done = agent.compactor.maybe_compact(agent.memory, agent.model, agent.prompt_templates, self._review_summary)
        if done is not None:
            run.emit(step_events.memory_compacted(done.step, run.event_fields()))

    def _review_summary(self, step: SummaryStep) -> bool:
        """The compactor's review: Stop wins; then any step callback returning exactly False vetoes. The summary
        is stamped with the run and the step it was made in first (a reopened chat shows it there)."""
        self.run.check_interrupt()
        step.run_id, step.step_number = self.run.run_id, self.run.step
        return not any(vote is False for vote in self.agent.step_callbacks.fire(step, self.agent))

    # -- planning ------------------------------------------------------------------------------------
    def planning_step(self, task: str, is_update: bool, remaining_steps: int,
                      recorded: ModelReply | None = None) -> Steps[PlanningStep]:
        """A plan (the model's, or the `recorded` one of a run paused at its review), reviewed when the policy
        says so; in pause mode the review ends the run, the memory keeping the plan (agents/decisions/pending.py)."""
        agent, run = self.agent, self.run
        fields = run.event_fields()
        step = PlanningStep(step_number=run.step, is_update=is_update)
        step.timing.start_time = time.time()
        run.emit(step_events.step_started(step, fields))
        templates = agent.prompt_templates
        if is_update:
            self.compact()
            messages = ([{"role": "system", "content": render(templates, "planning.update_plan_pre", task=task)}]
                        + agent.memory.conversation
                        + [{"role": "user", "content": render(templates, "planning.update_plan_post",
                                                              remaining_steps=remaining_steps)}])
        else:
            messages = [{"role": "user", "content": render(templates, "planning.initial_plan", task=task,
                                                           **agent.prompt_variables(run))}]
        reply, step.model_duration_s = recorded, self.resumed_model_s
        if reply is None:
            reply, step.model_duration_s = yield from self.call_model(messages, stop_sequences=[_END_PLAN])
        step.model_output, step.token_usage = reply.content, reply.token_usage
        run.emit(step_events.model_output(step, fields))
        plan = step.plan = reply.content.replace(_END_PLAN, "").strip()
        run.emit(step_events.plan_proposed(step, fields))
        try:
            decision = run.ask(DecisionKind.PLAN, {"plan": plan})
        except RunPaused as paused:
            self.record_pending(paused, step, reply, in_code=False)
            raise
        plan_text = render(templates, "planning.plan_message", plan=plan)
        step.decisions = run.take_decisions()
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
        agent.memory.add_step(step)
        agent.step_callbacks.fire(step, agent)
        run.emit(step_events.step_finished(step, fields))
        return step

    def answer_after_max_steps(self, task: str) -> Steps[FinalAnswerStep]:
        """One last model call asking for the best answer from what the memory holds: the run's answer step."""
        agent, run = self.agent, self.run
        templates = agent.prompt_templates
        fields = run.event_fields()
        final = FinalAnswerStep(run_id=run.run_id)
        final.guess_timing.start_time = time.time()
        run.emit(step_events.guess_started(final, fields))
        self.compact()
        messages = ([{"role": "system", "content": render(templates, "final_answer.pre_messages")}]
                    + agent.memory.conversation
                    + [{"role": "user", "content": render(templates, "final_answer.post_messages", task=task)}])
        reply, _ = yield from self.call_model(messages)
        final.guess_timing.end_time = time.time()
        # Never the app's own error text or code shown as if it were a guess (agents/answer_checks/best_guess.py).
        final.output, final.guess_usage = usable_guess(reply.content), reply.token_usage
        run.emit(step_events.guess_output(final, fields))
        run.emit(step_events.guess_finished(final, fields))
        return final
