"""Reaching a Docker Engine, and a private one for development and CI (``make docker-up`` / ``docker-down``).

Which engine: ``configure_host(docker_host=...)`` (agents/host_settings.py; the app's ``AGENTDECK_DOCKER_HOST``)
if set, else ``DOCKER_HOST`` (Docker's own convention), else the private daemon's socket when it runs, else
``/var/run/docker.sock``. The private daemon keeps everything of its own under ``private_dir()`` (data,
exec state, pid file, socket), has no bridge and touches no iptables: sandbox containers have no network at all.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from typing import Any

SYSTEM_SOCKET = "/var/run/docker.sock"
START_TIMEOUT_S = 60.0
CONTAINERD_PID = "exec/containerd/containerd.pid"


class DockerUnavailable(RuntimeError):
    """No Docker Engine answers; the message names the setting to change."""


def private_dir() -> str:
    """The private daemon's folder: ``configure_host(dockerd_dir=...)`` (the app's ``AGENTDECK_DOCKERD_DIR``)."""
    from agents.host_settings import host_settings

    return host_settings().dockerd_dir


def private_socket() -> str:
    return os.path.join(private_dir(), "docker.sock")


def docker_host() -> str:
    from agents.host_settings import host_settings

    explicit = host_settings().docker_host or os.environ.get("DOCKER_HOST")
    if explicit:
        return explicit
    if os.path.exists(private_socket()):
        return "unix://" + private_socket()
    return "unix://" + SYSTEM_SOCKET


#: How long one engine call (create, start, remove a container) may take once the engine answered its ping: a
#: loaded 2-core machine was seen taking over 10 s to start a container, which is slow but not a dead engine.
OPERATION_TIMEOUT_S = 60.0


def connect(timeout_s: float = 10.0) -> Any:
    """A docker SDK client for the engine ``docker_host()`` names, checked with a ping within `timeout_s`; its
    later calls may take up to OPERATION_TIMEOUT_S."""
    host = docker_host()
    try:
        import docker  # type: ignore[import-untyped]
    except ImportError as exc:
        raise DockerUnavailable("AGENTDECK_SANDBOX=docker needs the 'docker' Python package (pip install docker)"
                                ) from exc
    try:
        client = docker.DockerClient(base_url=host, timeout=timeout_s)
        client.ping()
        client.api.timeout = max(timeout_s, OPERATION_TIMEOUT_S)
    except Exception as exc:
        raise DockerUnavailable(
            f"no Docker Engine answers at {host} ({type(exc).__name__}: {str(exc)[:200]}). AGENTDECK_SANDBOX=docker "
            "needs one: set AGENTDECK_DOCKER_HOST (or DOCKER_HOST) to a running engine, start the private one "
            "with 'make docker-up', or choose another backend with AGENTDECK_SANDBOX=local") from exc
    return client


def reachable() -> str | None:
    """None when an engine answers, else the reason (tests use it to skip with a clear message)."""
    try:
        connect(timeout_s=5).close()
        return None
    except DockerUnavailable as exc:
        return str(exc)


def _pid(pid_file: str = "dockerd.pid") -> int | None:
    """The running process a pid file of the private daemon names (dockerd's, or its containerd's)."""
    try:
        with open(os.path.join(private_dir(), pid_file)) as fh:
            pid = int(fh.read().strip())
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
        return None if state == b"Z" else pid  # a killed daemon nobody reaped is gone
    except (OSError, ValueError, IndexError):
        return None


def up() -> str:
    """Start the private daemon unless an engine already answers; return the host it listens on."""
    if reachable() is None:
        return docker_host()
    if _pid() is not None:
        raise DockerUnavailable(f"a private dockerd runs (pid file in {private_dir()}) but does not answer")
    dockerd = shutil.which("dockerd") or "/usr/sbin/dockerd"
    if not os.path.exists(dockerd):
        raise DockerUnavailable("dockerd is not installed: as root, 'apt-get install -y docker.io' "
                                "(make docker-up does it)")
    os.makedirs(private_dir(), mode=0o700, exist_ok=True)
    # A daemon that was killed leaves its pid files (its own and its containerd's; where nobody reaps them the
    # processes linger as zombies), and dockerd refuses to start over them, or waits for the dead containerd.
    for pid_file in ("dockerd.pid", CONTAINERD_PID):
        if _pid(pid_file) is None:
            try:
                os.unlink(os.path.join(private_dir(), pid_file))
            except FileNotFoundError:
                pass
    with open(os.path.join(private_dir(), "dockerd.log"), "ab") as log:
        subprocess.Popen([dockerd, "--data-root", os.path.join(private_dir(), "data"),
                          "--exec-root", os.path.join(private_dir(), "exec"),
                          "--pidfile", os.path.join(private_dir(), "dockerd.pid"),
                          "-H", "unix://" + private_socket(), "--bridge=none", "--iptables=false", "--ip-masq=false",
                          # Sandboxes outlive a restart of the engine (their channel and signals never needed it).
                          "--live-restore",
                          "--containerd-namespace", "agentdeck", "--containerd-plugins-namespace", "agentdeck-plugins"],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if os.path.exists(private_socket()) and reachable() is None:
            return "unix://" + private_socket()
        time.sleep(0.2)
    raise DockerUnavailable(f"the private dockerd did not answer within {START_TIMEOUT_S:.0f} s; "
                            f"see {private_dir()}/dockerd.log")


def down() -> None:
    """Stop the private daemon (its sandbox containers go with it)."""
    pid = _pid()
    if pid is None:
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _pid() is not None:
        time.sleep(0.1)


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m agents.executor.docker.daemon")
    parser.add_argument("action", choices=("up", "down"))
    parser.add_argument("--dir", default=None, help="the private daemon's folder (default: /var/tmp/agentdeck-dockerd)")
    args = parser.parse_args(argv)
    if args.dir:
        from agents.host_settings import configure_host

        configure_host(dockerd_dir=args.dir)
    if args.action == "up":
        print(f"DOCKER_HOST={up()}")
    else:
        down()


if __name__ == "__main__":
    main()
