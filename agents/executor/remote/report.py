"""The supervised host's security report: which promises a remote sandbox holds, and which it cannot.

Why a module of its own: the report is the documentation of the trust split (the app trusts the supervisor's
answers only within their checked bounds; the supervisor trusts nothing of the worker), kept next to the code.
"""

from __future__ import annotations

from typing import Any

from ..backend import SandboxLimits


def security_report(host_id: str, limits: SandboxLimits) -> dict[str, dict[str, Any]]:
    """The report of the supervised host `host_id` started with `limits` (its spec's)."""
    return {
        "process": {"active": True, "detail": "separate worker process with a minimal environment, inside a remote "
                    f"sandbox ({host_id}), as a user id of its own (not the supervisor's)"},
        "supervisor": {"active": True, "detail": "a supervisor beside the worker (uid 0 of the sandbox with only the "
                       "capabilities to start, signal, read and count the worker) relays its frames unchanged over "
                       "one stream; the app bounds every frame and reply and kills the sandbox on a malformed, "
                       "oversized, late or misdirected one"},
        "freeze_between_steps": {"active": True, "detail": "the supervisor stops the worker (SIGSTOP) whenever the "
                                 "app is not waiting for it; found running, it is replaced"},
        "thread_check": {"active": True, "detail": "after each step the supervisor reads the worker's threads from "
                         "/proc/<pid>/task inside the sandbox; one not parked in futex restarts it"},
        "cpu_time": {"active": True, "detail": "the worker's CPU time is read by the supervisor from /proc, "
                     "one stream round trip per reading"},
        "disk_limit": {"active": True, "detail": f"workspace and temp folder held to {limits.max_disk_mb} MB and "
                       f"{limits.max_disk_files:,} files, counted by the supervisor at any depth (files too deep for a "
                       "path are named in the run's notes), deleted-but-open included; a deleted file the worker "
                       "keeps only mapped cannot be sized without CAP_SYS_ADMIN, so it fails the limit closed (the "
                       "worker is restarted and its temp folder emptied)"},
        "tool_calls": {"active": True, "detail": "tool calls travel back over the stream and run in the app; the "
                       "sandbox needs no network"},
        "file_transfer": {"active": True, "detail": "files move by the service's file API with size caps; the app "
                          "re-checks every path and size (an upload's create-only check is a separate request)"},
        "memory_cgroup": {"active": False, "detail": "as the sandbox's engine sets it (the pod's or microVM's "
                          "limit), not checked by the app"},
    }
