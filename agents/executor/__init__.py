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
    WorkerCrashedError,
)
from .sandbox import PythonSandbox, RunResult

__all__ = [
    "Artifact",
    "InvalidToolError",
    "InvalidVariableError",
    "PythonSandbox",
    "RunResult",
    "SandboxClosedError",
    "SandboxError",
    "SandboxStartError",
    "WorkerCrashedError",
]
