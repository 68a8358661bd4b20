"""The outcome of one run, and how the app shapes it from what the worker sent (the worker may be lying).

Every limit is applied again here on the app's side: the size of logs, result and error, the names of
types; stop, crash and protocol errors get messages that say what happened to the sandbox's state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..shown_value import table_from_data
from .artifacts import Artifact
from .protocol import encode_json

NOTE_ROOM = 500  # room for the worker's own truncation note beyond max_output_chars


@dataclass
class ExecutionResult:
    """Outcome of one `PythonSandbox.run()`. ``output`` is plain JSON-able data, or the repr of other objects."""

    logs: str = ""
    output: Any = None
    is_final_answer: bool = False
    error: str | None = None
    artifacts: list[Artifact] = field(default_factory=list)
    error_type: str | None = None
    output_type: str = "NoneType"
    state_lost: bool = False
    duration_s: float = 0.0
    untrusted: bool = False  # the worker broke the protocol during this run; its output may be forged
    threads_left: int = 0  # Python threads of the code still alive after the step (the worker's report)
    #: A data frame's first rows as the last expression's table, checked (agents/shown_value.py); None otherwise.
    table: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None



def short_name(value: Any) -> str | None:
    """A type or error name from the worker, kept short and printable."""
    if value is None:
        return None
    if type(value) is str and len(value) <= 100 and value.replace(".", "a").replace("_", "a").isalnum():
        return value  # already short and printable (the usual "NoneType", "ValueError"): nothing to filter
    text = "".join(ch for ch in str(value)[:100] if ch.isalnum() or ch in "._")
    return text or None


def lose_state(result: ExecutionResult, why: str) -> None:
    result.state_lost = True
    result.logs += (f"\n[sandbox] {why}: all variables, imports and functions from earlier steps are "
                    "gone; define what you need again.\n")


def from_worker(msg: dict[str, Any], logs: list[str], max_output_chars: int, max_result_chars: int) -> ExecutionResult:
    """The worker's result message as a ExecutionResult, bounded as the app's settings say."""
    limit = max_output_chars + NOTE_ROOM
    text = "".join(logs) + str(msg.get("logs") or "")[:limit + 1]
    if len(text) > limit:
        text = text[:limit] + f"\n[output truncated at max_output_chars={max_output_chars}]\n"
    error = msg.get("error")
    return ExecutionResult(logs=text, output=bounded_output(msg.get("output"), max_result_chars),
                     is_final_answer=msg.get("is_final") is True,
                     error=str(error)[:limit] if error is not None else None,
                     error_type=short_name(msg.get("error_type")),
                     output_type=short_name(msg.get("output_type")) or "NoneType",
                     threads_left=1 if msg.get("threads_left") else 0, table=_checked_table(msg.get("table")))


def _checked_table(data: Any) -> dict[str, Any] | None:
    """The worker's table for the last expression, kept only as checked plain data (agents/shown_value.py)."""
    checked = table_from_data(data)
    if checked is None:
        return None
    columns, rows, shape = checked
    return {"columns": columns, "rows": rows, "shape": list(shape) if shape else None}


def bounded_output(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + f"\n[truncated {len(value) - limit} characters]"
    if isinstance(value, (list, dict)):
        encoded = encode_json(value)
        if len(encoded) > limit:
            return encoded[:limit] + f"\n[truncated {len(encoded) - limit} characters]"
    return value


def stopped(reason: str, logs: list[str], lost: bool, timeout_s: float, disk_why: str | None) -> ExecutionResult:
    if reason == "timeout":
        what = (f"TimeoutError: the code ran longer than the limit of {timeout_s} s "
                f"(timeout_s={timeout_s}; the app can raise it) and was stopped.")
    elif reason == "disk":
        what = f"DiskLimitError: the code was stopped: {disk_why or 'its files were over the limit'}."
    else:
        what = "InterruptedError: the run was interrupted."
    if lost:
        what += (" It did not stop in time, so the worker was restarted: all variables, imports and "
                 "functions from earlier steps were lost.")
    else:
        what += " Variables from earlier steps are kept."
    return ExecutionResult(logs="".join(logs), error=what, state_lost=lost,
                     error_type={"timeout": "TimeoutError", "disk": "DiskLimitError"}.get(reason, "InterruptedError"))


def protocol_error(logs: list[str], what: str) -> ExecutionResult:
    """The worker broke the protocol: its state and this run's output cannot be trusted."""
    return ExecutionResult(logs="".join(logs), error_type="SandboxProtocolError", state_lost=True, untrusted=True,
                     error=(f"SandboxProtocolError: the sandbox worker {what}. The code may have tampered "
                            "with the sandbox, so its output was discarded and a fresh sandbox was started: "
                            "all variables, imports and functions from earlier steps are gone."))


def crashed(logs: list[str], how: str, memory_limit_mb: int) -> ExecutionResult:
    return ExecutionResult(logs="".join(logs), error_type="WorkerCrashed", state_lost=True,
                     error=(f"WorkerCrashed: the sandbox worker stopped unexpectedly ({how}). "
                            f"A fresh worker was started; all state from earlier steps was lost. "
                            f"If the code used a lot of memory, the limit is memory_limit_mb={memory_limit_mb}."))
