"""Sandboxed Python executor: real CPython in a confined worker process.

See README.md in this folder for the isolation layers.
"""

from .artifacts import Artifact
from .errors import (
    InvalidToolError,
    InvalidVariableError,
    SandboxClosedError,
    SandboxError,
    SandboxStartError,
)
from .execution_result import ExecutionResult
from .sandbox import PythonSandbox

__all__ = [
    "Artifact",
    "ExecutionResult",
    "InvalidToolError",
    "InvalidVariableError",
    "PythonSandbox",
    "SandboxClosedError",
    "SandboxError",
    "SandboxStartError",
]
