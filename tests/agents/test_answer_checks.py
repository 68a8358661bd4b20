"""The embedded model's answers are checked before they are shown (agents/answer_checks/): issue 31's wrong
answers, each of a kind the checks catch, come back marked "unsure"; right ones pass as "unchecked".

The checks' own rules are tested on their own, then through a CodeAgent driven by a scripted model that stands in
for the embedded one (`prompt_style="tiny"`), with the real sandbox re-running the answering code.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from agents import ReplayModel
from agents import events as ev
from agents.answer_checks import (
    AnswerChecker,
    Rerun,
    expected_kind,
    kind_problem,
    question_terms,
    refers_to_earlier,
    unused_terms,
    usable_guess,
)
from agents.memory.export import to_markdown as memory_to_markdown
from agents.memory.serialize import memory_from_dict, memory_to_dict
from agents.prompts import load_prompt_templates
from agents.step_events import replay

TINY = load_prompt_templates("code_agent_tiny")


# ----- the kind of answer a question asks for -----------------------------------------------------------
@pytest.mark.parametrize(("question", "kind"), [
    ("Plot price over time", "chart"),
    ("Draw a histogram of body_mass_g", "chart"),
    ("Which column has the largest mean?", "column"),
    ("Which numeric column has the highest mean?", "column"),  # fresh-35's unmarked "bed00"
    ("Which of the numerical columns has the smallest mean?", "column"),
    ("What is the column count?", "any"),
    ("What is the value in the first column?", "any"),
    ("how many s in mississippi", "count"),
    ("How many rows does the table have?", "count"),
    ("What is 15% of 240?", "percentage"),
    ("What is 17 * 23?", "number"),
    ("What is the average flipper_length_mm?", "number"),
    ("What is the largest population?", "number"),
    ("Which state has the most airports?", "any"),
    ("What is the most common island?", "any"),
    ('Reverse the string "hello".', "any"),
])
def test_the_kind_of_answer_is_read_from_the_question(question: str, kind: str) -> None:
    assert expected_kind(question) == kind


def test_issue_31s_wrong_kinds_are_caught() -> None:
    assert kind_problem("chart", "AAPL", charts_made=0) is not None  # "plot price over time" -> "AAPL"
    county = kind_problem("column", "Lane County", 0, ("county", "state", "population"))
    assert county is not None and "'Lane County' is not one of the file's columns" in county.message
    assert kind_problem("number", "AAPL", 0) is not None
    assert kind_problem("percentage", "about a third", 0) is not None
    assert kind_problem("count", 2.5, 0) is not None and kind_problem("count", -1, 0) is not None


def test_answers_of_the_right_kind_pass() -> None:
    assert kind_problem("chart", None, charts_made=1) is None
    assert kind_problem("column", "population", 0, ("county", "population")) is None
    assert kind_problem("count", 4, 0) is None and kind_problem("count", 4.0, 0) is None
    assert kind_problem("percentage", "36%", 0) is None and kind_problem("number", "1,234.5", 0) is None
    assert kind_problem("any", "Torgersen", 0) is None


# ----- the code uses what the question names ---------------------------------------------------------------
def test_code_that_ignores_a_number_or_letter_of_the_question_is_caught() -> None:
    assert unused_terms(question_terms("What is 15% of 240?"), "final_answer(15 / 100 * 100)") == ["240"]
    assert unused_terms(question_terms("how many s in mississippi"), 'final_answer(len("mississippi"))') == ['"s"']
    letters = question_terms('How many times does the letter r appear in "strawberry"?')
    assert unused_terms(letters, 'final_answer("strawberry".count("a"))') == ['"r"']
    columns = question_terms("What is the mean of wind?", ("date", "wind", "weather"))
    assert unused_terms(columns, 'final_answer(pd.read_csv("w.csv")["weather"].mean())') == ['column "wind"']


def test_code_that_skips_the_operation_the_question_asks_for_is_caught() -> None:
    """A follow-up "now double that", given 391, was answered `final_answer(391)`."""
    assert unused_terms(question_terms("now double 391"), "final_answer(391)") == ["a multiplication"]
    assert unused_terms(question_terms("now double 391"), "final_answer(391 * 2)") == []
    assert unused_terms(question_terms("Divide 90 by 10."), "final_answer(90 - 10)") == ["a division"]
    percent = question_terms("What is 30% of 150?")  # answered 5.0 by `150 / 30`
    assert unused_terms(percent, "final_answer(150 / 30)") == ["a multiplication (a percentage of a number)"]
    assert unused_terms(percent, "final_answer(150 * 30 / 100)") == []


def test_code_that_uses_the_questions_terms_passes() -> None:
    assert unused_terms(question_terms("What is 15% of 240?"), "final_answer(240 * 0.15)") == []
    assert unused_terms(question_terms("how many s in mississippi"), 'final_answer("mississippi".count("s"))') == []
    assert unused_terms(question_terms("What is the square root of 169?"), "final_answer(math.sqrt(169))") == []


# ----- the checker, fed hand-made events --------------------------------------------------------------------
def _checker_after(task: str, code: str, charts: int = 0) -> AnswerChecker:
    checker = AnswerChecker(TINY)
    checker.observe(ev.RunStarted(run_id="r", step=0, task=task, agent_name="a", model_id="m", max_steps=3))
    checker.observe(ev.CodeProposed(run_id="r", step=1, code=code))
    for index in range(charts):
        checker.observe(ev.ArtifactCreated(run_id="r", step=1, path=f"/w/c{index}.png", relative_path=f"c{index}.png",
                                           artifact_kind="image"))
    return checker


def test_the_checker_is_unsure_of_a_wrong_kind_and_says_how_to_get_a_better_model() -> None:
    check = _checker_after("Plot price over time", 'final_answer(pd.read_csv("stocks.csv")["symbol"][0])').check("AAPL")
    assert check.verdict == "unsure"
    assert check.problems == ("A chart was asked for and none was made.",)
    assert "**Model**" in check.advice and "OPENAI_API_KEY" in check.advice


def test_the_checker_reruns_the_answering_code_and_compares() -> None:
    checker = _checker_after("What is 17 * 23?", "final_answer(17 * 23)")
    same = checker.check(391, rerun=lambda code: Rerun(answered=True, value=391))
    assert same.verdict == "unchecked" and any("same result" in p for p in same.passed)
    differs = checker.check(391, rerun=lambda code: Rerun(answered=True, value=392))
    assert differs.verdict == "unsure" and "gave 392 instead" in differs.problems[0]
    failed = checker.check(391, rerun=lambda code: Rerun(answered=False, error="NameError"))
    assert failed.verdict == "unsure" and "NameError" in failed.problems[0]


def test_a_managed_agents_events_are_not_the_runs_answer() -> None:
    checker = _checker_after("Plot price over time", "final_answer(1)")
    checker.observe(ev.ArtifactCreated(run_id="s", step=1, parent_id="call1", path="/w/x.png", relative_path="x.png",
                                       artifact_kind="image"))
    assert checker.check("done").verdict == "unsure"


# ----- best guesses and follow-ups ---------------------------------------------------------------------------
@pytest.mark.parametrize("text", [
    "NameError: name 'that' is not defined", "Traceback (most recent call last):\n  ...",
    "Internal error: KeyError: 'x'", "```python\nfinal_answer(2)\n```", "final_answer(that * 2)", "  ",
])
def test_error_text_or_code_is_never_a_best_guess(text: str) -> None:
    assert usable_guess(text) is None


def test_a_real_guess_is_kept() -> None:
    assert usable_guess("The largest mean is in population.") == "The largest mean is in population."
    assert usable_guess(42) == 42


@pytest.mark.parametrize(("question", "refers"), [
    ("now double that", True), ("Add 5 to that.", True), ("multiply it by 3", True),
    ("What is the result times 2?", True), ("What is 17 * 23?", False),
    ('Reverse the string "do it".', False), ("How many rows does the table have?", False),
])
def test_follow_ups_that_refer_to_an_earlier_answer_are_recognised(question: str, refers: bool) -> None:
    assert refers_to_earlier(question) is refers


# ----- through a CodeAgent standing in for the embedded model -------------------------------------------------
def tiny(replies: list[str]) -> ReplayModel:
    return ReplayModel(replies, model_id="embedded:smollm2", prompt_style="tiny")


def _answer(events: list[ev.Event]) -> ev.FinalAnswer:
    return next(e for e in events if isinstance(e, ev.FinalAnswer))


def test_a_wrong_kind_answer_is_marked_unsure_and_the_mark_is_saved(make_code_agent, tmp_path: Path) -> None:
    agent, _ = make_code_agent(tiny(['```python\nfinal_answer("AAPL")\n```'] * 3))  # sent back twice, then kept
    events = list(agent.run("Plot price over time", stream=True))
    check = _answer(events).check
    assert check is not None and check.verdict == "unsure" and "chart" in check.problems[0]
    restored = memory_from_dict(memory_to_dict(agent.memory))  # a reopened chat shows the same mark
    replayed = [e for _, batch in replay(restored.steps, tmp_path) for e in batch]
    assert _answer(replayed).check == check
    exported = memory_to_markdown(restored)  # and so does the chat's export
    assert "Not sure of this answer.** A chart was asked for and none was made." in exported


def test_a_right_looking_answer_passes_after_a_real_rerun(make_code_agent) -> None:
    agent, _ = make_code_agent(tiny(["```python\nfinal_answer(17 * 23)\n```"]))
    check = _answer(list(agent.run("What is 17 * 23?", stream=True))).check
    assert check is not None and check.verdict == "unchecked", check
    assert any("same result" in p for p in check.passed)


def test_answers_are_not_checked_when_the_checks_are_off_or_the_model_is_capable(make_code_agent) -> None:
    agent, _ = make_code_agent(tiny(['```python\nfinal_answer("AAPL")\n```']), answer_checks=False)
    assert _answer(list(agent.run("Plot price over time", stream=True))).check is None
    capable, _ = make_code_agent(ReplayModel(['```python\nfinal_answer("AAPL")\n```']))
    assert _answer(list(capable.run("Plot price over time", stream=True))).check is None


def test_a_follow_up_is_given_the_earlier_answer(make_code_agent) -> None:
    agent, model = make_code_agent(tiny(["```python\nfinal_answer(17 * 23)\n```",
                                         "```python\nfinal_answer(391 * 2)\n```"]))
    agent.run("What is 17 * 23?")
    events = list(agent.run("now double that", stream=True, reset=False))
    assert str(model.calls[-1][-1]["content"]).endswith("now double 391")
    answer = _answer(events)
    assert answer.value == 782 and answer.check is not None and answer.check.verdict == "unchecked"


def test_a_follow_up_with_no_earlier_answer_says_so_at_once(make_code_agent) -> None:
    agent, model = make_code_agent(tiny(["```python\nfinal_answer(1)\n```"]))
    events = list(agent.run("now double that", stream=True))
    finished = events[-1]
    assert isinstance(finished, ev.RunFinished) and finished.state == "error"
    assert finished.error is not None and finished.error.startswith("FollowUpUnsupportedError:")
    assert "cannot" in finished.error and "**Model**" in finished.error
    assert model.calls == []  # no steps of flailing: the model was never asked


def test_a_failed_runs_best_guess_is_not_error_text(make_code_agent) -> None:
    agent, _ = make_code_agent(tiny(["```python\nfinal_answer(that * 2)\n```",
                                     "NameError: name 'that' is not defined"]), max_steps=1)
    result = agent.run("What is 5 plus 5?", return_result=True)
    assert result.state.value == "max_steps" and result.output is None


def test_a_checked_tiny_run_stops_after_three_failed_steps(make_code_agent) -> None:
    """Issue 31: a follow-up ran ten steps for a minute; a run whose answers are checked stops after three."""
    failing = ["```python\nfinal_answer(undefined_name * 2)\n```"] * 10
    agent, model = make_code_agent(tiny([*failing, "no idea"]), max_steps=10)
    result = agent.run("What is 5 plus 5?", return_result=True)
    assert result.state.value == "max_steps" and len(model.calls) == 4  # three steps and the best-guess call
    unchecked, model = make_code_agent(tiny([*failing, "no idea"]), max_steps=10, answer_checks=False)
    unchecked.run("What is 5 plus 5?", return_result=True)
    assert len(model.calls) == 11


def test_no_claim_that_the_code_used_the_questions_terms_when_it_names_none() -> None:
    """A newcomer's "Say ready" answered 10 was shown as checked because "the code uses the numbers, text and
    columns the question names": it names none, so that says nothing and is not said."""
    used = render_terms_used()
    assert used not in _checker_after("Say ready", "final_answer(10)").check(10).passed
    assert used in _checker_after("What is 17 * 23?", "final_answer(17 * 23)").check(391).passed


def render_terms_used() -> str:
    from agents.prompts import render

    return render(TINY, "answer_checks.terms_used")
