"""The E2B stand-in's sandbox processes inside a Docker container of the sandbox image, standing in for E2B's
microVM: the image's own Python and executor package, no network, a read-only root and a /tmp of its own, the
sandbox's /home/user bound from the stand-in's folder (so the file API and the processes see the same files),
root inside with only the supervisor's capabilities (the flags of the remote package's own container tests).
One container per sandbox process; pause is `docker pause`, kill `docker kill`.

Why the docker CLI and not the SDK: `docker run -i` gives the process's stdin/stdout/stderr as plain pipes, as
envd's process service has them.
"""
from __future__ import annotations

import secrets
import shlex
import subprocess
from typing import Any

from agents.executor.docker import daemon, image

CAPABILITIES = ("SETUID", "SETGID", "KILL", "SYS_PTRACE", "DAC_READ_SEARCH", "CHOWN", "FOWNER")


def capabilities() -> tuple[str, ...]:
    """The supervisor's capabilities (the remote package's list once it is there)."""
    try:
        from agents.executor.remote.interface import SUPERVISOR_CAPABILITIES
    except ImportError:
        return CAPABILITIES
    return tuple(SUPERVISOR_CAPABILITIES)


class DockerRunner:
    """Starts each process as `docker run -i --rm` of the sandbox image on the private engine."""

    def __init__(self) -> None:
        self.host = daemon.docker_host()
        self.client = daemon.connect()
        self.image = image.ensure_image(self.client)
        self.names: dict[int, str] = {}
        # This runner's own label: containers another checkout's tests left on the shared engine are not ours.
        self.run_label = f"agentdeck.e2b-standin-run={secrets.token_hex(6)}"

    def _image(self) -> str:
        """The image's tag, imported again if it went (the engine is shared: another checkout's app removes
        images of other trees as stale); never pulled."""
        try:
            self.client.images.get(self.image)
        except Exception:
            self.image = image.ensure_image(self.client)
        return self.image

    def _docker(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["docker", "-H", self.host, *args], capture_output=True, timeout=60, check=False)

    def start(self, sandbox: Any, argv: list[str], env: dict[str, str], cwd: str) -> subprocess.Popen[bytes]:
        if argv[:2] == ["/bin/bash", "-c"]:  # the sandbox image has no shell: a plain command line is split as
            argv = shlex.split(argv[2])      # bash would (an E2B template has bash; ours is the bare image)
        name = f"e2b-standin-{sandbox.id}-{secrets.token_hex(3)}"
        flags = ["run", "-i", "--rm", "--pull", "never", "--name", name, "--network", "none", "--user", "0:0",
                 "--cap-drop", "ALL",
                 *[f"--cap-add={cap}" for cap in capabilities()], "--security-opt", "no-new-privileges",
                 "--security-opt", "seccomp=unconfined", "--init",
                 "--label", "agentdeck.e2b-standin=1", "--label", self.run_label,
                 "--read-only", "--tmpfs", "/tmp:size=512m,mode=1777", "--pids-limit", "100", "--memory", "2g",
                 "-v", f"{sandbox.local('/home/user')}:/home/user", "-w", cwd]
        for key, value in env.items():
            flags += ["-e", f"{key}={value}"]
        popen = subprocess.Popen(["docker", "-H", self.host, *flags, self._image(), *argv], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.names[popen.pid] = name
        return popen

    def kill(self, popen: subprocess.Popen[bytes]) -> None:
        name = self.names.get(popen.pid)
        if name is not None and popen.poll() is None:
            self._docker("kill", name)
        if popen.poll() is None:
            popen.kill()
        if name is not None:  # a client killed before its container started leaves it "Created" (--rm never acts)
            self._docker("rm", "-f", name)

    def pause(self, popen: subprocess.Popen[bytes], paused: bool) -> None:
        name = self.names.get(popen.pid)
        if name is not None and popen.poll() is None:
            self._docker("pause" if paused else "unpause", name)

    def leftover(self) -> list[str]:
        """Containers of this stand-in still there (a test checks nothing is left behind)."""
        found = self._docker("ps", "-aq", "--filter", f"label={self.run_label}")
        return found.stdout.decode().split()


class StandInE2BBackend:
    """The `e2b` backend on its stand-in, for the per-backend suites (`AGENTDECK_TEST_BACKENDS=e2b-standin`): one
    stand-in service for the process, its sandboxes' processes in containers."""

    name = "e2b-standin"

    def __new__(cls) -> Any:
        from agents.executor.e2b.backend import E2BBackend
        from tests.executor.e2b_standin import E2BStandIn

        service = E2BStandIn(runner=DockerRunner())
        backend = E2BBackend(service.settings())
        backend.name = cls.name
        backend.standin = service  # type: ignore[attr-defined]
        return backend
