"""The sandbox a CodeAgent's code runs in: started on first use (or taken from the backend's warm pool),
attached by id (a saved chat's, on another replica or after a restart), restarted, or closed for new imports.

A part of `CodeAgent` (agents/loop/code_agent.py) kept apart by concept; it reads the agent's workdir, limits,
imports and tools.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from agents.executor.errors import SandboxError
from agents.loop.tool_runner import ToolRunner

if TYPE_CHECKING:
    from agents.executor import PythonSandbox
    from agents.executor.backend import SandboxBackend, SandboxLimits

#: Standard-library modules code may always import (the sandbox adds its own safe defaults).
BASE_IMPORTS = ("collections", "datetime", "itertools", "math", "queue", "random", "re", "stat",
                "statistics", "time", "unicodedata", "json", "functools", "decimal", "fractions", "string")


class CodeAgentSandbox:
    workdir: Path
    authorized_imports: list[str]
    executor_timeout_s: float
    sandbox_backend: str | SandboxBackend | None
    sandbox_limits: SandboxLimits | None
    sandbox_pool: bool
    sandbox_owner: str
    runner: ToolRunner
    _sandbox: PythonSandbox | None
    _sandbox_lock: threading.Lock

    @staticmethod
    def warm_up(authorized_imports: Iterable[str] = (), executor_timeout_s: float = 30.0,
                sandbox: str | SandboxBackend | None = None, sandbox_limits: SandboxLimits | None = None,
                pool_size: int | None = None) -> None:
        """Have the backend's warm pool keep sandboxes ready for agents made with these arguments (the app calls
        it at start, so even its first session's first step starts warm); `pool_size` ready per spec (None: the
        pool's own, `pool.DEFAULT_SIZE` for a new one)."""
        import dataclasses

        from agents.executor import backends, pool
        from agents.executor.backend import SandboxLimits, SandboxSpec

        limits = dataclasses.replace(sandbox_limits or SandboxLimits(), timeout_s=executor_timeout_s)
        imports = tuple(sorted(set(BASE_IMPORTS) | set(authorized_imports)))
        pool.for_backend(backends.resolve(sandbox), pool_size).prewarm(
            SandboxSpec(workspace=None, authorized_imports=imports, limits=limits))

    @property
    def live_sandbox(self) -> PythonSandbox | None:
        """The agent's sandbox if one was started (the app reads its workspace through it), never starting one."""
        return self._sandbox

    @property
    def sandbox(self) -> PythonSandbox:
        """The agent's sandbox, started on first use."""
        with self._sandbox_lock:
            if self._sandbox is None:
                self._sandbox = self._new_sandbox(None)
            return self._sandbox

    def _new_sandbox(self, attach: str | None) -> PythonSandbox:
        import dataclasses

        from agents.executor import PythonSandbox

        limits = dataclasses.asdict(self.sandbox_limits) if self.sandbox_limits is not None else {}
        limits["timeout_s"] = self.executor_timeout_s
        sandbox = PythonSandbox(workdir=str(self.workdir), authorized_imports=list(self.authorized_imports),
                                backend=self.sandbox_backend, pool=self.sandbox_pool and attach is None,
                                owner=self.sandbox_owner, attach=attach, **limits)
        try:
            sandbox.register_tools(self.runner.as_callables(None))  # each run binds its own (_execute_code)
        except BaseException:
            if attach is not None:
                sandbox.close()
            raise
        return sandbox

    def attach_sandbox(self, host_id: str) -> bool:
        """Take the running sandbox of that id (a saved chat's, started by another replica or before a restart)
        as this agent's, in place of starting one: True when its worker kept the variables, False when the backend
        started a new worker there (they must be rebuilt). `SandboxError` (nothing changed) when the backend cannot
        attach it: gone, another owner's (`sandbox_owner`), other imports. Only before the agent has a sandbox."""
        with self._sandbox_lock:
            if self._sandbox is not None:
                raise SandboxError("this agent has a sandbox already")
            sandbox = self._new_sandbox(host_id)
            self._sandbox = sandbox
            return sandbox.attached_with_state

    def restart_sandbox(self) -> None:
        """Forget every variable, import and function the code made: its next code runs in a fresh worker.
        For a conversation rewound to an earlier point, whose recorded code is then re-run there."""
        with self._sandbox_lock:
            sandbox = self._sandbox
        if sandbox is not None:
            sandbox.reset()

    def change_imports(self, authorized_imports: Iterable[str]) -> bool:
        """Let the code import `authorized_imports` (besides BASE_IMPORTS) from the next run; between runs only.
        The sandbox's imports are fixed when it starts, so a change closes it: the next code runs in a fresh one,
        without the variables the earlier code made (`agents.loop.restore.rebuild_sandbox_state` re-runs the
        recorded code there). The agent, its model and its memory stay. False (nothing closed) if unchanged."""
        imports = sorted(set(BASE_IMPORTS) | set(authorized_imports))
        if imports == self.authorized_imports:
            return False
        with self._sandbox_lock:
            sandbox, self._sandbox = self._sandbox, None
            self.authorized_imports = imports
        if sandbox is not None:
            sandbox.close()
        return True
