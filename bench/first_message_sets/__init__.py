"""The first-message evaluation's questions (bench/first_message_eval.py asks them), with expected answers.

Questions cover arithmetic, short strings and one-column facts about an uploaded table (the bundled
seattle-weather.csv and penguins.csv, and small tables made here from fixed seeds: tables.py), and a few follow-ups
(a second message in the same chat, only the second graded). The expected answers are computed with pandas, for
grading only: the agent never sees them.

Two groups of sets, each module's docstring says when and why each of its sets was written:
accuracy_sets.py ("original", "new", "held-out", "held-out-2": prompt tuning measured on questions it was not
tuned on) and answer_check_sets.py ("issue-31", "fresh-31" to "fresh-36": issue 31's answer checks, each fresh set
written and committed before it was run). Their accuracies are reported apart, so a prompt or check fitted to the
sets it was tuned on shows.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bench.first_message_sets.accuracy_sets import accuracy_sets
from bench.first_message_sets.answer_check_sets import answer_check_sets
from bench.first_message_sets.question import Question
from bench.first_message_sets.tables import ASSETS

__all__ = ["ASSETS", "SETS", "Question", "questions"]

#: The sets, in the order they were written (see above); `--only`'s indices follow this order.
SETS = ("original", "new", "held-out", "held-out-2", "issue-31", "fresh-31", "fresh-32", "fresh-33", "fresh-34",
        "fresh-35", "fresh-36")


def questions(folder: Path) -> list[Question]:
    """Every set's questions in SETS' order, each marked with its set, expected answers computed from the data."""
    by_name = {**accuracy_sets(folder), **answer_check_sets(folder)}
    if set(by_name) != set(SETS):
        raise RuntimeError(f"the sets made ({sorted(by_name)}) are not the ones listed in SETS ({sorted(SETS)})")
    return [replace(question, set=name) for name in SETS for question in by_name[name]]
