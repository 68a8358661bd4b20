"""Step callbacks keyed by step type."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agents.errors import ConfigurationError
from agents.memory.steps import STEP_TYPES, MemoryStep

StepCallback = Callable[[MemoryStep, Any], Any]


class StepCallbacks:
    """Accepts a callable, a list of callables (called for every step), or a dict keyed by step class or
    step type name (`"action"`, `"planning"`, `ActionStep`, ...) whose values are a callable or a list."""

    def __init__(self, spec: Any = None) -> None:
        self._by_type: dict[str, list[StepCallback]] = {}
        self._for_all: list[StepCallback] = []
        if spec is None:
            return
        if callable(spec):
            self._for_all.append(spec)
        elif isinstance(spec, (list, tuple)):
            self._for_all.extend(self._checked(spec))
        elif isinstance(spec, dict):
            for key, callbacks in spec.items():
                type_name = self._type_name(key)
                callbacks = callbacks if isinstance(callbacks, (list, tuple)) else [callbacks]
                self._by_type.setdefault(type_name, []).extend(self._checked(callbacks))
        else:
            raise ConfigurationError("step_callbacks must be a callable, a list, or a dict keyed by step type.")

    @staticmethod
    def _type_name(key: Any) -> str:
        if isinstance(key, type) and issubclass(key, MemoryStep):
            for name, cls in STEP_TYPES.items():
                if cls is key:
                    return name
        if isinstance(key, str) and key in STEP_TYPES:
            return key
        raise ConfigurationError(f"Unknown step type {key!r} in step_callbacks; use one of {sorted(STEP_TYPES)}.")

    @staticmethod
    def _checked(callbacks: Any) -> list[StepCallback]:
        for callback in callbacks:
            if not callable(callback):
                raise ConfigurationError(f"Step callback {callback!r} is not callable.")
        return list(callbacks)

    def add(self, callback: StepCallback, step_type: str | type | None = None) -> None:
        if step_type is None:
            self._for_all.append(callback)
        else:
            self._by_type.setdefault(self._type_name(step_type), []).append(callback)

    def fire(self, step: MemoryStep, agent: Any) -> list[Any]:
        """Call the callbacks for `step`; return their results (compaction reads them as votes)."""
        results = []
        for callback in (*self._for_all, *self._by_type.get(step.step_type, ())):
            results.append(callback(step, agent))
        return results
