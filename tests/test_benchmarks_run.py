"""The benchmarks' own runs must work (a benchmark that silently measures a failed run is worse than none)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import PROJECT_ROOT


def test_agent_loop_benchmark_run_completes():
    from bench.agent_loop import run_once

    figures = run_once(30)
    assert figures["chars_sent"] > 30 * figures["last_prompt_chars"] // 4  # every step really sent a prompt


def test_agent_loop_benchmark_measures_tracing_off_and_on():
    completed = subprocess.run([sys.executable, "bench/agent_loop.py", "--tracing"], cwd=PROJECT_ROOT,
                               capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "tracing off:" in completed.stdout and "tracing on" in completed.stdout
    spans = int(completed.stdout.split("spans recorded while on: ")[1].split()[0].replace(",", ""))
    assert spans > 200  # the traced runs really made spans


def test_async_agents_benchmark_runs_both_modes():
    completed = subprocess.run([sys.executable, "bench/async_agents.py", "--agents", "4", "--latency", "0.2"],
                               cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-2000:]
    rows = [line.split() for line in completed.stdout.splitlines() if line.split()[:1] in (["sync"], ["async"])]
    assert [row[0] for row in rows] == ["sync", "async", "sync", "async"]


def test_memory_compaction_benchmark_prints_its_figures():
    completed = subprocess.run([sys.executable, "bench/memory_compaction.py"], cwd=PROJECT_ROOT,
                               capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "every prompt under the budget: yes" in completed.stdout


def test_ui_load_client_applies_the_servers_diffs_as_the_page_does():
    """The load benchmark's client applies Gradio's diffs in place; it must end with what gradio_client's own
    (copying) apply_diff makes of them, which is the server's value (bar a corner of Gradio's list diffs)."""
    import copy
    import random

    from gradio.utils import diff
    from gradio_client.utils import apply_diff

    from bench.ui_load import apply_edits

    rng = random.Random(5)

    def value(depth: int = 0):
        kind = rng.random()
        if depth > 3 or kind < 0.3:
            return rng.choice(["a", "ab", "abc", 1, 2.5, None, True])
        if kind < 0.65:
            return [value(depth + 1) for _ in range(rng.randint(0, 4))]
        return {rng.choice("pqrs"): value(depth + 1) for _ in range(rng.randint(0, 4))}

    same = 0
    for _ in range(500):
        old, new = value(), value()
        if rng.random() < 0.5 and isinstance(old, (list, dict)):  # an edited copy: appends, adds, deletes
            new = copy.deepcopy(old)
            if isinstance(new, list):
                if rng.random() < 0.5:
                    new.append(value(2))
                else:
                    del new[1:]
                if new and isinstance(new[0], str):
                    new[0] += "zz"
            else:
                if new:
                    new.pop(next(iter(new)))
                new["t"] = value(2)
        edits = diff(old, new)
        reference = apply_diff(old, edits)
        assert apply_edits(copy.deepcopy(old), edits) == reference
        same += reference == new
    assert same > 490


@pytest.mark.slow
def test_ui_load_benchmark_run_completes():
    completed = subprocess.run([sys.executable, "bench/ui_load.py", "--sessions", "1,2", "--rounds", "1",
                                "--steps", "4"], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert completed.stdout.count("p95 with 2 sessions / p95 with 1") == 2 and "no errors" in completed.stdout


def test_the_first_message_evaluation_grades_an_answer_no_float_can_hold_as_wrong() -> None:
    """A model's answer of 10**400 crashed the whole evaluation (OverflowError in the grading) after 97 outcomes."""
    from bench.first_message_eval import is_correct

    assert is_correct(10**400, 42) is False
    assert is_correct("42.0", 42) is True and is_correct("x", 42) is False


def test_the_first_message_sets_are_all_made_in_order_from_fixed_seeds(tmp_path) -> None:
    """Every set named in SETS has questions, in SETS' order (`--only`'s indices rely on it), and the made-up files
    are the same bytes on every run, so a set's expected answers never change between its runs."""
    from bench.first_message_sets import SETS, questions

    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    made = questions(first)
    assert [q.set for q in made] == sorted((q.set for q in made), key=SETS.index)
    assert {q.set for q in made} == set(SETS)
    questions(second)
    assert sorted(p.name for p in first.iterdir()) == sorted(p.name for p in second.iterdir())
    assert all((second / p.name).read_bytes() == p.read_bytes() for p in first.iterdir())
    fresh = [q for q in made if q.set == "fresh-36"]
    assert {q.kind for q in fresh} == {"arithmetic", "table", "chart"} and all(q.expected is not None for q in fresh)
