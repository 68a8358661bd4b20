"""The worker's `init` command, made from a sandbox's spec: one place for what every backend's worker is told, so
a new limit or layer reaches the local worker and a container's alike."""

from __future__ import annotations

from typing import Any

from .backend import SandboxSpec
from .local.process import APP_ROOT


def init_command(spec: SandboxSpec, workdir: str, tmpdir: str, **host_specific: Any) -> dict[str, Any]:
    """`host_specific`: what only the host knows (its user id, the private root's mount point, read paths)."""
    limits = spec.limits
    command: dict[str, Any] = {
        "op": "init", "workdir": workdir, "tmpdir": tmpdir, "app_root": APP_ROOT,
        "authorized_imports": list(spec.authorized_imports), "memory_limit_mb": int(limits.memory_limit_mb),
        "max_output_chars": int(limits.max_output_chars), "max_result_chars": int(limits.max_result_chars),
        "max_file_size_mb": int(limits.max_file_size_mb), "max_files_written": int(limits.max_files_written),
        "max_open_files": int(limits.max_open_files), "use_landlock": spec.use_landlock,
        "use_seccomp": spec.use_seccomp,
        # False only for the attack test suite: no guard, real builtins, no audit hook (a full bypass).
        "python_layers": bool(spec.python_layers), "tools": sorted(spec.tools),
    }
    command.update(host_specific)
    return command
