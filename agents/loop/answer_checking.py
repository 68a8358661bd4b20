"""The CodeAgent's part in checking a small model's answers (agents/answer_checks/): it feeds the checker the
run's events, gives a follow-up the earlier answer it refers to, re-runs the answering code in its sandbox, and
makes the second, independent attempt (agents/loop/second_attempt.py) when `agreement` is on.

Why here: the checker reads only events, but re-running code needs the sandbox, a follow-up needs the memory and
a second attempt the model, which the agent owns. Only for models whose prompt profile asks for it
(`PromptProfile.check_answers`: the tiny one) and whose prompt file words the checks (`answer_checks`), and only
while `answer_checks` is on.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from agents.answer_checks import AnswerChecker, Rerun, earlier_answer, refers_to_earlier
from agents.answer_checks.agreement import Attempt
from agents.answer_checks.follow_up import with_earlier_answer
from agents.errors import AgentDeckError, FollowUpUnsupportedError
from agents.events import AnswerCheck, Event
from agents.loop.context import RunContext
from agents.loop.second_attempt import AttemptingAgent, may_attempt, second_attempt, task_message_of
from agents.prompts import render
from agents.prompts.profiles import name_choice_for


class CheckedAgent(AttemptingAgent, Protocol):
    """What the checker needs of its CodeAgent (a protocol: code_agent.py imports this module)."""

FILE_LINE_END = "is in the current directory."  # how the tiny prompt lists an upload (`uploaded_files`)


class AnswerChecking:
    """Per-run answer checking for one CodeAgent, which calls these from its MultiStepAgent hooks."""

    def __init__(self, agent: CheckedAgent, enabled: bool, agreement: bool = False, send_back: bool = False) -> None:
        """`agreement`: confirm a plain answer that passed the other checks with a second, independent attempt
        (a model call more; the app turns it on for the embedded model, `AppConfig.answer_agreement`).
        `send_back`: tell the model what the cheap checks doubt while it has steps left, so it answers again. Off
        unless asked: with the embedded 135M model it made no answer right on three evaluation sets (29 questions,
        2026-11-28) and made a checked question take three to six times as long; the doubted answer is marked
        either way."""
        self.agent = agent
        self.enabled = enabled
        self.agreement = enabled and agreement
        self.send_back = enabled and send_back
        self._checker: AnswerChecker | None = None
        self._refusal: AgentDeckError | None = None

    def observer(self, emit: Callable[[Event], None], top_level: bool = True) -> Callable[[Event], None]:
        """A top-level run's emit function that first shows each event to a new checker (a run for a manager
        is not checked: its answer goes to the manager)."""
        self._checker = None
        if not self.enabled or not top_level:
            return emit
        checker = self._checker = AnswerChecker(self.agent.prompt_templates, self.question_of, self.has_files)

        def observed(event: Event) -> None:
            checker.observe(event)
            emit(event)

        return observed

    def question_of(self, task: str) -> tuple[str, tuple[str, ...]]:
        """The person's words in `task` and the uploads' columns it lists (as the tiny prompt writes them)."""
        choice = name_choice_for(self.agent.prompt_templates, task)
        if choice is not None:
            return choice.evidence, choice.names
        lines = [line for line in task.splitlines() if not line.strip().endswith(FILE_LINE_END)]
        return "\n".join(lines).strip(), ()

    @staticmethod
    def has_files(task: str) -> bool:
        """Whether the task lists uploads (as the tiny prompt writes them)."""
        return any(line.strip().endswith(FILE_LINE_END) for line in task.splitlines())

    def answer_problem(self, value: Any) -> str | None:
        """What the cheap checks find wrong with a step's answer, told to the model while it has steps left (it
        then answers once more; the last answer is checked and marked as any). None: nothing found, or no checks."""
        checker = self._checker
        if checker is None or not self.send_back:
            return None
        problems = checker.problems_for_model(value)
        return render(self.agent.prompt_templates, "answer_checks.retry", problems=problems) if problems else None

    def task_for_run(self, task: str) -> str:
        """A follow-up that refers to an earlier answer gets it written in; without one the run is refused."""
        self._refusal = None
        if not self.enabled:
            return task
        question, _ = self.question_of(task)
        if not refers_to_earlier(question):
            return task
        templates = self.agent.prompt_templates
        earlier = earlier_answer(self.agent.memory.steps)
        if earlier is None:
            refusal = render(templates, "answer_checks.follow_up_unsupported")
            self._refusal = FollowUpUnsupportedError(refusal)
            return task
        written = render(templates, "answer_checks.follow_up_task",
                         question=with_earlier_answer(question, earlier))
        return task[: len(task) - len(question)] + written if task.endswith(question) else written

    def refusal(self) -> AgentDeckError | None:
        return self._refusal

    def check(self, value: Any, run: RunContext | None = None) -> dict[str, Any] | None:
        """The verdict on the run's answer `value` (as a dict); `run`: the run's context, which a second attempt
        reports its events to (without it there is none)."""
        checker = self._checker
        if checker is None:
            return None
        attempt = None
        if self.agreement and run is not None and may_attempt(run):
            def attempt() -> Attempt:
                message = task_message_of(self.agent, run.run_id, checker.seen.task)
                return second_attempt(self.agent, run, message, checker.seen.task, value)
        try:
            return checker.check(value, rerun=self._rerun, second_attempt=attempt).as_dict()
        except Exception as exc:  # a check that breaks must not lose the answer: it is shown, marked unsure
            problem = render(self.agent.prompt_templates, "answer_checks.checks_failed", error=type(exc).__name__)
            advice = render(self.agent.prompt_templates, "answer_checks.advice")
            return AnswerCheck(verdict="unsure", problems=(problem,), advice=advice).as_dict()

    def _rerun(self, code: str) -> Rerun:
        """The answering code run once more in the same sandbox (its variables as the run left them)."""
        agent = self.agent
        result = agent.sandbox.run(code, cancel=agent._interrupt_flag, tools=agent.runner.as_callables(None))
        if result.error or not result.is_final_answer:
            return Rerun(answered=False, error=result.error_type or "it gave no answer")
        return Rerun(answered=True, value=result.output)
