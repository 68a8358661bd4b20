"""The stand-in Kubernetes API server's pods (tests/executor/k8s_standin.py): what a pod is, where pods run
(`PodRuntime`; `LocalPods` here, `DockerPods` in k8s_standin_docker.py) and how an exec'd process is killed."""
from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from aiohttp import web

from agents.executor.remote.interface import SUPERVISOR_BOOT
from tests.conftest import PROJECT_ROOT

POD_PYTHON = "/usr/local/bin/python3"
POD_WORKSPACE = "/workspace"
KILL_WAIT_S = 10  # how long a killed process may take to be reaped


@dataclass
class Pod:
    """A stand-in pod: its folder holds what stands for the pod's /workspace, /tmp and the image's private-root
    mount point; its live exec processes and sockets."""

    name: str
    namespace: str
    sandbox: str
    folder: Path
    container: str | None = None  # DockerPods: the container standing for the pod
    procs: set[asyncio.subprocess.Process] = field(default_factory=set)
    sockets: set[web.WebSocketResponse] = field(default_factory=set)
    ended: bool = False  # removed or its claim deleted: an exec still starting in it ends as it starts


class PodRuntime(Protocol):
    """Where the stand-in's pods run: `start` one for a bound claim, `exec` a command in it (a process whose
    stdin/stdout/stderr the exec websocket carries), `stop` it when its claim is deleted or it is removed."""

    async def start(self, pod: Pod, template: dict[str, Any]) -> None: ...

    async def exec(self, pod: Pod, command: list[str]) -> asyncio.subprocess.Process: ...

    async def stop(self, pod: Pod) -> None: ...


#: The sandbox image's paths (agents/executor/docker/image.py) and where a local stand-in pod keeps them.
IMAGE_EXECUTOR = "/opt/agentdeck/executor"
IMAGE_NEW_ROOT = "/opt/agentdeck/root"
POD_TMP = "/tmp/"


class LocalPods:
    """Pods as local folders and exec'd commands as local processes of this user: the image's interpreter is
    this one, its executor folder this checkout's, the pod's /workspace and /tmp the pod's folders. Enough for
    the cluster calls and the files; not for the supervisor, whose worker runs as another user that cannot
    reach this machine's interpreter (`DockerPods` runs the sandbox image for that)."""

    async def start(self, pod: Pod, template: dict[str, Any]) -> None:
        for sub in ("workspace", "tmp", "root"):
            (pod.folder / sub).mkdir(parents=True, mode=0o755)
        os.chmod(pod.folder / "tmp", 0o1777)

    async def exec(self, pod: Pod, command: list[str]) -> asyncio.subprocess.Process:
        return await local_process(pod, command)

    async def stop(self, pod: Pod) -> None:
        return None


async def local_process(pod: Pod, command: list[str]) -> asyncio.subprocess.Process:
    """An exec'd command as a local process, its paths mapped (see `LocalPods`)."""
    mapped: list[str] = []
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(pod.folder / "tmp")}
    if SUPERVISOR_BOOT in command:  # the image's boot of the supervisor; here the checkout's module (the same
        # arguments: remote/interface.py), the project importable
        at = command.index(SUPERVISOR_BOOT)
        command = [command[0], "-B", "-m", "agents.executor.remote.supervisor", *command[at + 2:]]
        env["PYTHONPATH"] = str(PROJECT_ROOT)
    for arg in command:
        if arg == POD_PYTHON:
            arg = sys.executable
        elif arg == IMAGE_EXECUTOR:
            arg = str(PROJECT_ROOT / "agents" / "executor")
        elif arg == IMAGE_NEW_ROOT:
            arg = str(pod.folder / "root")
        elif arg.startswith(POD_WORKSPACE):
            arg = str(pod.folder / "workspace") + arg[len(POD_WORKSPACE):]
        elif arg.startswith(POD_TMP):
            arg = str(pod.folder / "tmp") + "/" + arg[len(POD_TMP):]
        mapped.append(arg)
    return await asyncio.create_subprocess_exec(*mapped, stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                cwd=pod.folder / "workspace", env=env, start_new_session=True)


async def kill_exec(proc: asyncio.subprocess.Process) -> None:
    """Kill an exec'd process and its children (its own session) and wait, bounded, for it to be reaped."""
    if proc.returncode is not None:  # ended (and reaped): its pid may be another process's by now
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(proc.wait(), KILL_WAIT_S)
