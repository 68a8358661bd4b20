"""The worker's ``init`` frame, made in one place for every backend: each host adds only what it alone knows
(where the worker's paths are, its user id, its private root, its ``sys.path``)."""

from __future__ import annotations

from typing import Any

from .backend import SandboxSpec
from .local.process import APP_ROOT


def init_command(spec: SandboxSpec, workdir: str, tmpdir: str, *, extra_read_paths: list[str], uid: int | None,
                 new_root: str | None, nice: int | None = None, sys_path: list[str] | None = None) -> dict[str, Any]:
    """The settings that name the session: its workspace, limits, confinement and tools."""
    limits = spec.limits
    init: dict[str, Any] = {
        "op": "init", "workdir": workdir, "tmpdir": tmpdir, "app_root": APP_ROOT,
        "authorized_imports": list(spec.authorized_imports), "memory_limit_mb": int(limits.memory_limit_mb),
        "max_output_chars": int(limits.max_output_chars), "max_result_chars": int(limits.max_result_chars),
        "max_file_size_mb": int(limits.max_file_size_mb), "max_files_written": int(limits.max_files_written),
        "max_open_files": int(limits.max_open_files), "use_landlock": spec.use_landlock,
        "use_seccomp": spec.use_seccomp, "extra_read_paths": list(extra_read_paths), "uid": uid,
        "new_root": new_root,
        # False only for the attack test suite: no guard, real builtins, no audit hook (a full bypass).
        "python_layers": bool(spec.python_layers), "tools": sorted(spec.tools),
    }
    if nice is not None:
        init["nice"] = nice
    if sys_path is not None:
        init["sys_path"] = sys_path
    return init
