"""The benchmarks' own runs must work (a benchmark that silently measures a failed run is worse than none)."""
from __future__ import annotations

import subprocess
import sys

from tests.conftest import PROJECT_ROOT


def test_agent_loop_benchmark_run_completes():
    from bench.agent_loop import run_once

    figures = run_once(30)
    assert figures["chars_sent"] > 30 * figures["last_prompt_chars"] // 4  # every step really sent a prompt


def test_memory_compaction_benchmark_prints_its_figures():
    completed = subprocess.run([sys.executable, "bench/memory_compaction.py"], cwd=PROJECT_ROOT,
                               capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "every prompt under the budget: yes" in completed.stdout
