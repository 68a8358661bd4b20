"""The answer checker: fed a run's typed events, it says how far the app can stand behind the run's answer.

Why events: the checker sees what the chat sees (the task, the code that ran, the charts saved, the errors), so it
needs nothing of the loop's internals and a test can drive it with hand-made events. What it cannot see in events
(running the answering code again) it is handed as a function by the agent that owns the sandbox.

The checks, cheapest first: the answer's kind against the question's (agents/answer_checks/kinds.py); the answer
the question's own terms determine, worked out by the app, or the bounds they put on it (recompute.py); the code
uses what the question names (terms.py); the answering code run again gives the same value; for a plain value
that passed all these, a second, independent attempt gives the same value (agreement.py; handed in as a function
too). Any failure makes the verdict "unsure", with the reasons and how to get a better model; passing them all
leaves it "unchecked" (a small model's answer no one verified), or "agreed" when two attempts agree, never
"right".
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agents import events as ev
from agents.answer_checks.agreement import Attempt, agrees, same_code, same_value, worth_a_second_attempt
from agents.answer_checks.kinds import AnswerKind, expected_kind, kind_problem
from agents.answer_checks.recompute import answer_bound, matches, within, worked_answer
from agents.answer_checks.terms import question_terms, unused_terms
from agents.prompts import render


@dataclass(frozen=True)
class Rerun:
    """The answering code run once more: whether it answered again, and with what."""
    answered: bool
    value: Any = None
    error: str = ""


@dataclass
class RunSeen:
    """What the checker gathered from a run's top-level events."""
    task: str = ""
    code: str = ""  # the last code the run proposed: the code that gave the answer
    charts: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class FirstChecks:
    """The cheap checks' outcome: what passed, what failed, and whether the app worked out the same answer."""
    passed: tuple[str, ...]
    problems: tuple[str, ...]
    worked_out: bool


class AnswerChecker:
    """Observes one run's events (`observe`), then checks its answer (`check`).

    `templates`: the agent's prompt templates, whose `answer_checks` section words what the person reads.
    `question_of`: the person's words and the files' columns from the task as the agent received it.
    `has_files`: whether the task came with files (then a number in the question may be a date or a value in them,
    and the app works nothing out from the question's numbers alone)."""

    def __init__(self, templates: dict[str, Any],
                 question_of: Callable[[str], tuple[str, tuple[str, ...]]] = lambda task: (task, ()),
                 has_files: Callable[[str], bool] = lambda task: False) -> None:
        self.templates = templates
        self.question_of = question_of
        self.has_files = has_files
        self.seen = RunSeen()
        self._run_id: str | None = None

    def observe(self, event: ev.Event) -> None:
        """Take one event of the run; a managed agent's events (with a parent) are not the run's answer."""
        if event.parent_id is not None:
            return
        if isinstance(event, ev.RunStarted):
            self._run_id, self.seen = event.run_id, RunSeen(task=event.task)
        elif isinstance(event, ev.CodeProposed):
            self.seen.code = event.code
        elif isinstance(event, ev.ArtifactCreated) and event.artifact_kind == "image":
            self.seen.charts += 1
        elif isinstance(event, ev.StepError):
            self.seen.errors.append(event.error_type)

    def check(self, value: Any, rerun: Callable[[str], Rerun] | None = None,
              second_attempt: Callable[[], Attempt] | None = None) -> ev.AnswerCheck:
        """The verdict on `value`, the run's answer; `rerun` runs the answering code again, `second_attempt` asks
        the model afresh (None: not possible or not wanted; it is asked only when every other check passed and
        the answer is a plain value)."""
        kind = expected_kind(self.question_of(self.seen.task)[0])
        found = self._first_checks(value, for_model=False)
        passed, problems, worked_out = list(found.passed), list(found.problems), found.worked_out
        wording = self._wording()
        if self.seen.code:
            if rerun is not None and not problems:
                again = rerun(self.seen.code)
                if not again.answered:
                    problems.append(render(self.templates, "answer_checks.rerun_failed",
                                           error=again.error or "no answer"))
                elif not same_value(again.value, value):
                    problems.append(render(self.templates, "answer_checks.rerun_differs", value=str(again.value)[:80]))
                else:
                    passed.append(wording["rerun_same"])
        else:
            problems.append(wording["no_code"])
        agreed = False
        # An answer the app worked out the same from the question's terms needs no second opinion (and a second
        # attempt that differed would only cast doubt on a right answer).
        if second_attempt is not None and not problems and not worked_out and worth_a_second_attempt(kind, value):
            attempt = second_attempt()
            if attempt.stopped:
                pass  # Stop was pressed during it: nothing is concluded, the answer stays as the checks left it
            elif not attempt.answered:
                problems.append(render(self.templates, "answer_checks.second_attempt_failed",
                                       error=attempt.error or "no answer"))
            elif not agrees(value, attempt.value):
                problems.append(render(self.templates, "answer_checks.second_attempt_differs",
                                       first=str(value)[:80], second=str(attempt.value)[:80]))
            elif same_code(attempt.code, self.seen.code):
                passed.append(wording["second_attempt_same_code"])  # the same computation: no confirmation
            else:
                agreed = True
                passed.append(wording["second_attempt_agrees"])
        if problems:
            return ev.AnswerCheck(verdict="unsure", passed=tuple(passed), problems=tuple(problems),
                                  advice=wording["advice"])
        if agreed:
            return ev.AnswerCheck(verdict="agreed", passed=tuple(passed), advice=wording["advice_unchecked"])
        return ev.AnswerCheck(verdict="unchecked", passed=tuple(passed), advice=wording["advice_unchecked"])

    def problems_for_model(self, value: Any) -> tuple[str, ...]:
        """What the cheap checks (no re-run, no model call) find wrong with `value`, worded for the model, which
        may still try again: never the value the app worked out (the model is to find its own answer)."""
        return self._first_checks(value, for_model=True).problems

    def _first_checks(self, value: Any, for_model: bool) -> FirstChecks:
        """The checks that need neither the sandbox nor the model: the kind, the answer the question's terms give
        (or bound), and the terms the code uses."""
        question, columns = self.question_of(self.seen.task)
        kind = expected_kind(question)
        passed: list[str] = []
        problems: list[str] = []
        worked_out = False
        found = kind_problem(kind, value, self.seen.charts, columns)
        if found is not None:
            problems.append(found.message)
        elif kind != "any":
            passed.append(render(self.templates, "answer_checks.kind_passed", kind=_kind_words(kind)))
        if found is None and kind != "chart" and not self.has_files(self.seen.task):
            worked = worked_answer(question)
            bound = answer_bound(question) if worked is None and kind == "percentage" else None
            if worked is not None and matches(value, worked.value):
                worked_out = True
                passed.append(render(self.templates, "answer_checks.worked_out_same", how=worked.how))
            elif worked is not None:
                key = "worked_out_differs_for_model" if for_model else "worked_out_differs"
                problems.append(render(self.templates, f"answer_checks.{key}", how=worked.how,
                                       value=str(value)[:80]))
            elif bound is not None and not within(value, bound):
                problems.append(render(self.templates, "answer_checks.out_of_bounds", why=bound.why,
                                       value=str(value)[:80]))
        if self.seen.code:
            terms = question_terms(question, columns)
            missing = unused_terms(terms, self.seen.code)
            if missing:
                problems.append(render(self.templates, "answer_checks.terms_unused", terms=missing))
            elif kind != "chart" and (terms.numbers or terms.texts or terms.columns or terms.operations):
                # Said only when the question names something to use ("Say ready" names nothing: no claim).
                passed.append(render(self.templates, "answer_checks.terms_used"))
        return FirstChecks(tuple(passed), tuple(problems), worked_out)

    def _wording(self) -> dict[str, str]:
        return {key: render(self.templates, f"answer_checks.{key}")
                for key in ("terms_used", "rerun_same", "no_code", "second_attempt_agrees",
                            "second_attempt_same_code", "advice", "advice_unchecked")}


def _kind_words(kind: AnswerKind) -> str:
    return {"chart": "a chart", "column": "a column of the file", "count": "a whole number",
            "percentage": "a number", "number": "a number", "any": "an answer"}[kind]
