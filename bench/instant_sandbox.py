"""A stand-in for the executor in loop benchmarks: it returns at once, so only the loop's cost is measured.

It understands the one script the benchmarks play: `x = x + 1; print(x)` steps, then `final_answer(x)`.
The real sandbox's round trip is measured by bench/executor.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class InstantResult:
    logs: str
    output: object = None
    is_final_answer: bool = False
    error: str | None = None
    artifacts: list = field(default_factory=list)
    error_type: str | None = None
    state_lost: bool = False
    untrusted: bool = False
    table: object = None  # a data frame value's table (ExecutionResult.table): none here


class InstantSandbox:
    def __init__(self) -> None:
        self.x = 0

    def run(self, code: str, on_log=None, cancel=None, tools=None) -> InstantResult:
        if "final_answer" in code:
            return InstantResult(logs="", output=self.x, is_final_answer=True)
        self.x += 1
        return InstantResult(logs=f"{self.x}\n")

    def reset(self) -> None:
        self.x = 0

    def interrupt(self) -> None: ...

    def close(self) -> None: ...
