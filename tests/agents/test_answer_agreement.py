"""A second, independent attempt confirms the embedded model's plain answers (agents/loop/second_attempt.py,
agents/answer_checks/agreement.py): two attempts that agree are marked so, two that differ are marked not sure
with both values, and a second attempt that gives no answer leaves the answer not sure.

Driven by a scripted model standing in for the embedded one (`prompt_style="tiny"`, taking call options as a
local model does), with the real sandbox running both attempts' code.
"""
from __future__ import annotations

from agents import ReplayModel
from agents import events as ev
from agents.answer_checks import agrees, worth_a_second_attempt
from agents.answer_checks.marks import answer_mark
from ui.chat.render import SECOND_ATTEMPT_TITLE, Transcript


class EmbeddedStandIn(ReplayModel):
    """A scripted model that says it is a very small local one: the tiny prompts, checks and call options."""
    prompt_style = "tiny"
    supports_response_prefix = True


def _code(expression: str) -> str:
    return f"```python\nfinal_answer({expression})\n```"


#: A question whose answer the app does not work out itself (agents/answer_checks/recompute.py reads "17 * 23", not
#: "the product of"): where one is worked out, no second attempt is made.
QUESTION = "What is the product of 17 and 23?"


def _run(make_code_agent, replies: list[str], question: str = QUESTION, **kwargs):
    model = EmbeddedStandIn(replies)
    kwargs.setdefault("answer_agreement", True)
    agent, _ = make_code_agent(model, **kwargs)
    events = list(agent.run(question, stream=True))
    answer = next(e for e in events if isinstance(e, ev.FinalAnswer))
    return model, events, answer


def _of(events: list[ev.Event], kind: type) -> list:
    return [e for e in events if isinstance(e, kind)]


def test_two_attempts_that_agree_are_marked_so(make_code_agent) -> None:
    model, events, answer = _run(make_code_agent, [_code("17 * 23"), _code("391")])
    assert answer.value == 391 and answer.check is not None and answer.check.verdict == "agreed", answer.check
    assert any("second, independent attempt" in p and "same answer" in p for p in answer.check.passed)
    assert "two attempts agree" in answer_mark(answer.check)
    started, finished = _of(events, ev.SecondAttemptStarted), _of(events, ev.SecondAttemptFinished)
    assert len(started) == 1 and started[0].answer == 391
    assert len(finished) == 1 and finished[0].answered and finished[0].agrees and finished[0].value == 391
    assert finished[0].code.endswith("final_answer(391)") and finished[0].model_calls == 1
    # Independent: the second call is sent the prompt and the task, nothing of the first attempt, and samples.
    first, second = model.calls
    assert second == first  # the same system prompt, examples and task; no step or answer of the first attempt
    assert model.call_options[1]["do_sample"] is True and model.call_options[1]["temperature"] == 0.5
    assert "do_sample" not in model.call_options[0]
    assert events.index(finished[0]) < events.index(answer)  # the verdict is on the answer the chat shows


def test_two_attempts_that_differ_are_marked_not_sure_with_both_values(make_code_agent) -> None:
    _, events, answer = _run(make_code_agent, [_code("17 * 23"), _code("17 + 23")])
    assert answer.check is not None and answer.check.verdict == "unsure"
    assert answer.check.problems == ("A second, independent attempt (the question asked afresh) gave a different "
                                     "answer: 391 the first time, 40 the second.",)
    assert "**Model**" in answer.check.advice  # the way to a better model
    finished = _of(events, ev.SecondAttemptFinished)[0]
    assert finished.answered and not finished.agrees and finished.value == 40


def test_a_second_attempt_that_gives_no_answer_leaves_the_answer_not_sure(make_code_agent) -> None:
    model, events, answer = _run(make_code_agent, [_code("17 * 23"), _code("undefined_name"), "no code at all"])
    assert answer.check is not None and answer.check.verdict == "unsure"
    assert "gave no answer (no code)" in answer.check.problems[0]
    finished = _of(events, ev.SecondAttemptFinished)[0]
    assert not finished.answered and finished.model_calls == 2  # one fresh call more, then it stops
    assert len(model.calls) == 3


def test_a_second_attempt_that_fails_once_gets_one_fresh_call(make_code_agent) -> None:
    model, _, answer = _run(make_code_agent, [_code("17 * 23"), _code("undefined_name"), _code("391")])
    assert answer.check is not None and answer.check.verdict == "agreed"
    assert model.calls[2] == model.calls[0]  # fresh: the failed call's error is not shown to it


def test_no_second_attempt_where_it_cannot_add_anything(make_code_agent) -> None:
    # A chart question (checked by the chart being made), an answer another check already doubts.
    # (Each is doubted, so the run ends on its one call: no second call, the second attempt.)
    model, events, answer = _run(make_code_agent, [_code('"AAPL"')] * 3, question="Plot price over time")
    assert answer.check is not None and answer.check.verdict == "unsure" and len(model.calls) == 1
    model, events, answer = _run(make_code_agent, [_code("15 / 100")] * 3, question="What is 15% of 240?")
    assert answer.check is not None and answer.check.verdict == "unsure" and len(model.calls) == 1
    assert not _of(events, ev.SecondAttemptStarted)


def test_the_second_attempt_is_off_unless_asked_for(make_code_agent) -> None:
    """The library's default is off; the app turns it on (`AppConfig.answer_agreement`), and only the embedded
    model's answers are checked at all."""
    model, events, answer = _run(make_code_agent, [_code("17 * 23")], answer_agreement=False)
    assert answer.check is not None and answer.check.verdict == "unchecked" and len(model.calls) == 1
    capable = ReplayModel([_code("17 * 23")])
    agent, _ = make_code_agent(capable, answer_agreement=True)
    assert agent.run("What is 17 * 23?") == 391 and len(capable.calls) == 1


def test_the_app_turns_it_on_and_an_operator_can_turn_it_off(monkeypatch) -> None:
    from ui.settings import AppConfig

    assert AppConfig.from_env().answer_agreement is True
    monkeypatch.setenv("AGENTDECK_ANSWER_AGREEMENT", "0")
    assert AppConfig.from_env().answer_agreement is False


def test_agreement_of_values() -> None:
    assert agrees(391, 391.0) and agrees(391, "391") and agrees("Torgersen", " torgersen ")
    assert agrees("AGENT DECK", "'agent deck'")
    assert not agrees(391, 392) and not agrees("Biscoe", "Dream") and not agrees(1, "one")
    assert worth_a_second_attempt("number", 391) and worth_a_second_attempt("any", "olleh")
    assert not worth_a_second_attempt("chart", "chart.png")
    assert not worth_a_second_attempt("any", "a long text\nover two lines") and not worth_a_second_attempt("any", None)


def test_the_chat_shows_the_second_attempt_while_it_runs_and_what_it_gave(make_code_agent) -> None:
    _, events, _ = _run(make_code_agent, [_code("17 * 23"), _code("17 + 23")])
    chat = Transcript()
    upto = events.index(_of(events, ev.SecondAttemptStarted)[0])
    for event in events[: upto + 1]:
        chat.apply(event)
    node = chat.by_id[f"second-attempt:{events[0].run_id}"]
    assert node.title == SECOND_ATTEMPT_TITLE and node.status == "pending"
    for event in events[upto + 1:]:
        chat.apply(event)
    assert node.status == "done" and node.parts["text"].startswith("It gave 40: not the same answer.")
    assert "Not sure of this answer" in chat.by_id[next(k for k in chat.by_id if k.startswith("answer"))].parts["text"]


def test_a_second_attempt_that_writes_the_same_code_confirms_nothing_more(make_code_agent) -> None:
    """The same code again is the re-run's computation: agreeing with it is no second opinion."""
    _, events, answer = _run(make_code_agent, [_code("17 * 23"), _code("17*23")])
    assert answer.check is not None and answer.check.verdict == "unchecked", answer.check
    assert any("wrote the same code" in p for p in answer.check.passed)
    assert _of(events, ev.SecondAttemptFinished)[0].agrees  # the event still says the values agree


def test_wordings_that_two_agreeing_attempts_got_wrong_are_caught_by_the_other_checks(make_code_agent) -> None:
    """fresh-32's wrong answers that two attempts agreed on: `len(...)` for a letter count worded "how many a's",
    a count of the wrong text for "count the letter l in parallel", and a value for "which of the columns"."""
    from agents.answer_checks import expected_kind, question_terms, unused_terms

    letters = question_terms('How many a\'s does "abracadabra" contain?')
    assert unused_terms(letters, 'final_answer(len("abracadabra"))') == ['"a"']
    assert unused_terms(question_terms("Count the letter l in parallel"), 'final_answer("letter".count("l"))') == [
        '"parallel"']
    assert unused_terms(question_terms("Count the letter l in parallel"), 'final_answer("parallel".count("l"))') == []
    assert expected_kind("Which of the columns has the smallest mean?") == "column"
    model, _, answer = _run(make_code_agent, [_code('len("abracadabra")')] * 3,
                            question='How many a\'s does "abracadabra" contain?')
    assert answer.check is not None and answer.check.verdict == "unsure" and len(model.calls) == 1


def test_no_second_attempt_when_the_person_reviews_code_before_it_runs(make_code_agent) -> None:
    """Its code would run without being shown: with code approval on, the answer keeps the other checks' verdict."""
    from agents.decisions import Decision, ScriptedDecider

    model, events, answer = _run(make_code_agent, [_code("17 * 23"), _code("391")], approval_policy="approve_code",
                                 decider=ScriptedDecider([Decision.approve()]))
    assert answer.value == 391 and answer.check is not None and answer.check.verdict == "unchecked"
    assert len(model.calls) == 1 and not _of(events, ev.SecondAttemptStarted)
