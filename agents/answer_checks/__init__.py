"""Checks of a small model's answers before the chat shows them: is the answer of the kind asked for, does the
code that made it use what the question names, does it give the same value when run again, does a second,
independent attempt agree. See checker.py; the words the person reads are the prompt file's `answer_checks`
section (agents/prompts/code_agent_tiny.yaml)."""
from agents.answer_checks.agreement import Attempt, agrees, same_value, worth_a_second_attempt
from agents.answer_checks.best_guess import usable_guess
from agents.answer_checks.checker import AnswerChecker, Rerun
from agents.answer_checks.follow_up import earlier_answer, refers_to_earlier
from agents.answer_checks.kinds import expected_kind, kind_problem
from agents.answer_checks.terms import question_terms, unused_terms

__all__ = ["AnswerChecker", "Attempt", "Rerun", "agrees", "earlier_answer", "expected_kind", "kind_problem",
           "question_terms", "refers_to_earlier", "same_value", "unused_terms", "usable_guess",
           "worth_a_second_attempt"]
