"""Exception types raised to the app by the executor.

Errors inside the sandboxed code never raise in the app: they come back as
``ExecutionResult.error``. These exceptions are for misuse of the sandbox itself.
"""

from __future__ import annotations


class SandboxError(Exception):
    """Base class for executor errors raised in the app process."""


class SandboxClosedError(SandboxError):
    """The sandbox was closed; create a new one."""


class SandboxStartError(SandboxError):
    """The worker process could not be started or did not become ready."""


class InvalidToolError(SandboxError, ValueError):
    """A tool name is not a valid identifier, or clashes with a reserved name."""


class InvalidVariableError(SandboxError, ValueError):
    """send_variables() got a name that cannot be bound or a value that is not JSON-able."""
