"""Who answers a decision request: the UI (from another thread), a terminal, or a test script."""
from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from typing import Protocol

from agents.decisions.types import Decision, DecisionKind, DecisionRequest, Outcome
from agents.errors import ConfigurationError


class Decider(Protocol):
    def decide(self, request: DecisionRequest, timeout_s: float | None) -> Decision | None:
        """Block until a decision is made; None means the time ran out."""


class ExternalDecider:
    """Waits for `resolve(request_id, decision)` called from another thread or a later web request.

    The run's own thread waits; no web-server worker is held. Pending requests survive a browser reload
    because they live here, with the agent, not in the page.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[DecisionRequest, threading.Event]] = {}
        self._answers: dict[str, Decision] = {}

    def register(self, request: DecisionRequest) -> None:
        """Make the request answerable before its event goes out, so a quick answer is never lost."""
        with self._lock:
            self._pending.setdefault(request.id, (request, threading.Event()))

    def decide(self, request: DecisionRequest, timeout_s: float | None) -> Decision | None:
        self.register(request)
        with self._lock:
            ready = self._pending[request.id][1]
        try:
            if not ready.wait(timeout_s):
                return None
            with self._lock:
                return self._answers.pop(request.id, None)  # None after cancel_all(): the run checks its stop flag
        finally:
            with self._lock:
                self._pending.pop(request.id, None)

    def resolve(self, request_id: str, decision: Decision) -> None:
        with self._lock:
            entry = self._pending.get(request_id)
            if entry is None:
                raise ConfigurationError(f"No pending decision with id {request_id!r}: it was answered or has expired.")
            request, ready = entry
            decision.validate_for(request)
            self._answers[request_id] = decision
        ready.set()

    def cancel_all(self) -> None:
        """Wake every waiting run without an answer (the run is being stopped)."""
        with self._lock:
            waiting = [ready for _, ready in self._pending.values()]
        for ready in waiting:
            ready.set()

    def pending(self) -> list[DecisionRequest]:
        with self._lock:
            return [request for request, _ in self._pending.values()]


class ScriptedDecider:
    """Answers from a list of decisions (or a function of the request): for tests and demos."""

    def __init__(self, decisions: Iterable[Decision] | Callable[[DecisionRequest], Decision]) -> None:
        self._function = decisions if callable(decisions) else None
        self._queue = [] if callable(decisions) else list(decisions)
        self.requests: list[DecisionRequest] = []

    def decide(self, request: DecisionRequest, timeout_s: float | None) -> Decision | None:
        self.requests.append(request)
        if self._function is not None:
            return self._function(request)
        if not self._queue:
            raise ConfigurationError(f"ScriptedDecider has no decision left for the {request.kind.value} request.")
        return self._queue.pop(0)


class TerminalDecider:
    """Asks at the terminal with `input()`."""

    def __init__(self, input_function: Callable[[str], str] = input, output: Callable[[str], None] = print) -> None:
        self._input = input_function
        self._print = output

    def decide(self, request: DecisionRequest, timeout_s: float | None) -> Decision | None:
        payload = request.payload
        if request.kind is DecisionKind.QUESTION:
            self._print(f"\nThe agent asks: {payload['question']}")
            return Decision.reply(self._input("Your answer: "))
        shown = {DecisionKind.PLAN: payload.get("plan"), DecisionKind.CODE: payload.get("code"),
                 DecisionKind.TOOL_CALL: f"{payload.get('tool_name')}({json.dumps(payload.get('arguments'))})"}
        self._print(f"\n--- {request.kind.value} awaiting your decision ---\n{shown[request.kind]}\n---")
        while True:
            choice = self._input("[a]pprove, [e]dit, [r]eject? ").strip().lower()[:1]
            if choice == "a":
                return Decision.approve()
            if choice == "r":
                return Decision.reject(self._input("Reason: "))
            if choice == "e":
                return self._read_edit(request)

    def _read_edit(self, request: DecisionRequest) -> Decision:
        self._print("Enter the new version; end with a line holding only '.'")
        lines: list[str] = []
        while (line := self._input("")) != ".":
            lines.append(line)
        text = "\n".join(lines)
        if request.kind is DecisionKind.TOOL_CALL:
            try:
                return Decision.edit(json.loads(text))
            except json.JSONDecodeError as exc:
                self._print(f"That is not a JSON object of arguments ({exc}); approving unchanged is [a].")
                return self.decide(request, None) or Decision(Outcome.REJECT)
        return Decision.edit(text)
