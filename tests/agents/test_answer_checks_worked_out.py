"""The app works out what a question's own terms determine (agents/answer_checks/recompute.py) and marks an answer
that differs: the two classes of wrong answer that went unmarked in fresh-32/33, "25% of 96" → 2400 (a percentage
as x * p, its magnitude wrong) and "how many times does n appear in banana" → 6 (code that counted something
else), as classes: any "p% of x", any letter named and counted in a word, a word's length, one arithmetic operation
on the numbers given; and where a percentage question is worded so that nothing is worked out, the bound its terms
put on any answer. A doubted answer is sent back to the model while it has steps left (never with the app's value).
"""
from __future__ import annotations

import pytest

from agents import ReplayModel
from agents import events as ev
from agents.answer_checks import AnswerChecker, Attempt, Rerun
from agents.answer_checks.recompute import answer_bound, matches, worked_answer
from agents.prompts import load_prompt_templates

TINY = load_prompt_templates("code_agent_tiny")


def _checker_after(task: str, code: str, has_files: bool = False) -> AnswerChecker:
    checker = AnswerChecker(TINY, has_files=lambda _task: has_files)
    checker.observe(ev.RunStarted(run_id="r", step=0, task=task, agent_name="a", model_id="m", max_steps=3))
    checker.observe(ev.CodeProposed(run_id="r", step=1, code=code))
    return checker


# ----- what the question's terms determine ----------------------------------------------------------------------
@pytest.mark.parametrize(("question", "value"), [
    ("Calculate 25% of 96.", 24), ("What's 8 percent of 1250?", 100), ("Find 5% of 880", 44),
    ("How much is 40 per cent of 85?", 34), ("What is 12.5% of 64?", 8),
    ("In the word banana, how many times does n appear?", 2), ("how many s in mississippi", 4),
    ("How many e's are in the word teepee?", 4), ("Count the letter l in parallel", 3),
    ('How many a\'s does "abracadabra" contain?', 5), ("How many o's are in 'bookworm'?", 3),
    ("What is the count of 'p' in 'pineapple'?", 3), ("Number of t's in committee", 2),
    ('How many times does the letter r appear in "Strawberry"?', 3),
    ('How many characters are in "transformers"?', 12), ('How many letters are in the word "open source"?', 10),
    ("Multiply 27 by 14.", 378), ("What is 250 - 73?", 177), ("What is 2 to the power of 10?", 1024),
    ("What is the square root of 169?", 13), ("now double 391", 782), ("subtract 15 from 75", 60),
    ("Take away 2 from 72", 70), ("what is half of 62.5?", 31.25), ("Add 5 to 12", 17), ("Now square 16", 256),
])
def test_the_answer_a_question_determines_is_worked_out(question: str, value: float) -> None:
    worked = worked_answer(question)
    assert worked is not None and worked.value == value, (question, worked)


@pytest.mark.parametrize("question", [
    "How many rows does the table have?", "Which column has the largest mean?", 'Reverse the string "hello".',
    "What is the mean of rain_mm in 2023-05?", "What is 10% of the total sales in 2023?", "how many vowels in banana",
    "What is 17 * 23 + 1?", "How many a's and b's are in 'abba'?", "What is the average of 3 and 5?",
])
def test_nothing_is_worked_out_where_the_terms_do_not_determine_the_answer(question: str) -> None:
    """A wrong worked-out value would mark right answers: data questions, two letters, three numbers give none."""
    assert worked_answer(question) is None


def test_a_percentage_worded_otherwise_is_still_bounded_by_its_terms() -> None:
    bound = answer_bound("Of 240 apples, 15% are red: how many are red?")
    assert bound is not None and (bound.low, bound.high) == (0, 240)
    assert answer_bound("What is 150% of 20?") is None  # over 100%: more than the base is possible
    assert answer_bound("Of 240 apples in the table, 15% are red: how many?") is None


def test_an_answer_matches_as_a_number_or_rounded_as_it_shows() -> None:
    assert matches(24.0, 24) and matches("24", 24) and matches("33.33", 100 / 3) and matches(2.0, 2)
    assert not matches(2400, 24) and not matches(6, 2) and not matches("six", 6) and not matches("33.3", 100 / 2.9)


# ----- the checker marks what differs --------------------------------------------------------------------------
def test_a_percentage_of_the_wrong_magnitude_is_marked_unsure() -> None:
    """fresh-32's "Calculate 25% of 96." → 2400: a multiplication is there and every term used, so only the
    worked-out value tells."""
    check = _checker_after("Calculate 25% of 96.", "final_answer(96 * 25)").check(2400, rerun=lambda c: Rerun())
    assert check.verdict == "unsure"
    assert "From the question's own terms the app gets 25% of 96 = 24, not 2400." in check.problems


def test_a_percentage_out_of_its_bounds_is_marked_unsure() -> None:
    check = _checker_after("Of 240 apples, 15% are red: how many are red?", "final_answer(240 * 15)").check(3600)
    assert check.verdict == "unsure"
    assert check.problems[0] == "That cannot be right: 15% of 240 is between 0 and 240, and the answer is 3600."


def test_a_letter_count_that_counted_something_else_is_marked_unsure() -> None:
    """fresh-33's "In the word banana, how many times does n appear?" → 6 from `len("banana")`."""
    check = _checker_after("In the word banana, how many times does n appear?",
                           'word = "banana"\nfinal_answer(len(word))').check(6)
    assert check.verdict == "unsure"
    assert 'From the question\'s own terms the app gets "n" appears 2 times in "banana", not 6.' in check.problems


def test_a_right_answer_says_the_app_worked_it_out_and_needs_no_second_attempt() -> None:
    asked: list[str] = []

    def second() -> Attempt:
        asked.append("second")
        return Attempt(answered=True, value=99, code="final_answer(99)")

    checker = _checker_after("In the word banana, how many times does n appear?", 'final_answer("banana".count("n"))')
    check = checker.check(2, rerun=lambda code: Rerun(answered=True, value=2), second_attempt=second)
    assert check.verdict == "unchecked" and asked == []  # a differing second attempt would only cast doubt
    assert any("worked the answer out from the question's own terms" in p for p in check.passed)


def test_with_files_the_question_numbers_are_not_worked_out() -> None:
    check = _checker_after("What is 17 * 23?", "final_answer(5)", has_files=True).check(5)
    assert not any("own terms" in p for p in (*check.passed, *check.problems))


def test_what_the_model_is_told_never_carries_the_apps_value() -> None:
    problems = _checker_after("Calculate 25% of 96.", "final_answer(96 * 25)").problems_for_model(2400)
    assert problems and not any("24," in p or "= 24" in p for p in problems)
    assert "2400" in problems[0]


# ----- through a CodeAgent standing in for the embedded model -------------------------------------------------
def _code(expression: str) -> str:
    return f"```python\nfinal_answer({expression})\n```"


def test_a_doubted_answer_is_sent_back_while_steps_remain(make_code_agent) -> None:
    model = ReplayModel([_code("len('banana')"), _code("'banana'.count('n')")], model_id="embedded:smollm2",
                        prompt_style="tiny")
    agent, _ = make_code_agent(model, answer_send_back=True)
    events = list(agent.run("In the word banana, how many times does n appear?", stream=True))
    answer = next(e for e in events if isinstance(e, ev.FinalAnswer))
    assert answer.value == 2 and answer.check is not None and answer.check.verdict == "unchecked", answer.check
    assert len(model.calls) == 2
    told = str(model.calls[1][-1]["content"])
    assert "The answer 6 is not what the question asks" in told and "2 times" not in told
    errors = [e for e in events if isinstance(e, ev.StepError)]
    assert [e.error_type for e in errors] == ["AnswerDoubted"]


def test_the_last_steps_answer_is_kept_and_marked(make_code_agent) -> None:
    model = ReplayModel([_code("96 * 25")] * 3, model_id="embedded:smollm2", prompt_style="tiny")
    agent, _ = make_code_agent(model, answer_send_back=True)
    result = agent.run("Calculate 25% of 96.", return_result=True)
    assert result.state.value == "success" and result.output == 2400 and len(model.calls) == 3
    final = agent.memory.steps[-1]
    assert final.check is not None and final.check["verdict"] == "unsure"
    assert any("25% of 96 = 24, not 2400" in p for p in final.check["problems"])


def test_without_send_back_a_doubted_answer_ends_the_run_marked(make_code_agent) -> None:
    """The default: one model call, the answer kept and marked "not sure" with the app's own value."""
    model = ReplayModel([_code("96 * 25")] * 3, model_id="embedded:smollm2", prompt_style="tiny")
    agent, _ = make_code_agent(model)
    result = agent.run("Calculate 25% of 96.", return_result=True)
    assert result.output == 2400 and len(model.calls) == 1
    final = agent.memory.steps[-1]
    assert final.check is not None and final.check["verdict"] == "unsure"
    assert any("25% of 96 = 24, not 2400" in p for p in final.check["problems"])


def test_a_capable_models_answer_is_never_sent_back(make_code_agent) -> None:
    model = ReplayModel([_code("96 * 25")])
    agent, _ = make_code_agent(model, answer_send_back=True)
    assert agent.run("Calculate 25% of 96.") == 2400 and len(model.calls) == 1


def test_an_apostrophe_is_not_a_quote_of_the_question() -> None:
    """fresh-33's "How many o's are in 'bookworm'?": the terms read "s are in " as quoted text, doubted the right
    answer 3 from `"bookworm".count("o")`, and sent it back until the run ended with none."""
    from agents.answer_checks import question_terms, unused_terms

    terms = question_terms("How many o's are in 'bookworm'?")
    assert "bookworm" in terms.texts and not any("are in" in t for t in terms.texts)
    assert unused_terms(terms, "final_answer('bookworm'.count('o'))") == []
    assert _checker_after("How many o's are in 'bookworm'?", "final_answer('bookworm'.count('o'))"
                          ).problems_for_model(3) == ()
