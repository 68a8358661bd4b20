"""The Docker backend's entry point: reaching the engine and the sandbox image once per process, starting and
attaching hosts (`host.py`), and removing containers whose app is gone (`sweep_orphans`).
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import Any

from ..backend import SandboxBackend, SandboxHost, SandboxSpec, attach_mismatch
from ..errors import SandboxError, SandboxStartError
from . import daemon, image, slot
from .container import LABEL
from .host import APP_LABEL, CAPABILITIES, DockerHost, boot_id, live_hosts, live_lock, unremoved


class DockerBackend:
    """Sandboxes as containers on a Docker Engine of this machine (``AGENTDECK_SANDBOX=docker``)."""

    name = "docker"
    capabilities = CAPABILITIES

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._client: Any = None
        self._tag: str | None = None
        self._swept = False

    def unavailable_reason(self) -> str | None:
        host = daemon.docker_host()
        if host.startswith("unix://") and not os.path.exists(host[len("unix://"):]):
            return (f"no Docker Engine at {host} (configure_host(docker_host=...), the app's AGENTDECK_DOCKER_HOST, "
                    "or DOCKER_HOST): start one with "
                    "'make docker-up', or use AGENTDECK_SANDBOX=local")
        try:
            daemon.connect(timeout_s=1.0).close()
        except daemon.DockerUnavailable as exc:
            return str(exc)
        return None

    def client_and_image(self) -> tuple[Any, str]:
        """The engine's client and the sandbox image's tag (assembled and imported once per process)."""
        with self._lock:
            try:
                if self._client is None:
                    self._client = daemon.connect()
                else:
                    self._client.ping()
            except daemon.DockerUnavailable as exc:
                self._client = None
                raise SandboxStartError(str(exc)) from exc
            except Exception as exc:
                self._client = None
                raise SandboxStartError(
                    f"the Docker Engine at {daemon.docker_host()} stopped answering ({type(exc).__name__}); "
                    "AGENTDECK_SANDBOX=docker needs it: restart it ('make docker-up') or choose "
                    "AGENTDECK_SANDBOX=local") from exc
            if not self._swept or unremoved:
                self._swept = True
                sweep_orphans(self._client)
                slot.sweep()  # after the containers: a killed app's slots, no longer mounted in any container
            from agents.host_settings import host_settings

            if self._tag is None and host_settings().docker_image:
                tag = str(host_settings().docker_image)
                try:
                    self._client.images.get(tag)
                except Exception as exc:
                    raise SandboxStartError(f"AGENTDECK_DOCKER_IMAGE={tag} is not an image of the Docker Engine at "
                                            f"{daemon.docker_host()}: build it with 'make sandbox-image'") from exc
                self._tag = tag
            if self._tag is None:
                try:
                    self._tag = image.ensure_image(self._client)
                except Exception as exc:
                    raise SandboxStartError(f"the sandbox image could not be built or imported: {exc}") from exc
            return self._client, self._tag

    def start(self, spec: SandboxSpec) -> DockerHost:
        return DockerHost(self, spec)

    def attach(self, host_id: str, expect: SandboxSpec | None = None) -> DockerHost:
        with live_lock:
            host = live_hosts.get(host_id)
        if host is None or host.dead:
            raise SandboxError(f"no live Docker sandbox {host_id[:80]!r} in this process")
        why = attach_mismatch(host.spec, expect) if expect is not None else None
        if why is not None:
            raise SandboxError(f"the Docker sandbox {host_id[:80]!r} cannot be attached: {why}")
        return host


def sweep_orphans(client: Any) -> int:
    """Remove sandbox containers whose app is gone (killed before it could close them), and this app's own that
    could not be removed when closed (the engine was down); at the first start and after such a close."""
    removed = 0
    try:
        containers = client.containers.list(all=True, filters={"label": LABEL})
    except Exception:
        return 0
    boot = boot_id()
    for container in containers:
        owner = container.labels.get(APP_LABEL, "")
        if container.id in unremoved:
            try:
                container.remove(force=True, v=True)
                unremoved.discard(container.id)
                removed += 1
            except Exception:
                pass
            continue
        owner_boot, _, pid = owner.rpartition(":")
        if owner_boot == boot and pid.isdigit() and os.path.exists(f"/proc/{pid}") and int(pid) != 1:
            continue  # a live app's sandbox (this one's or another's)
        try:
            container.remove(force=True, v=True)
            removed += 1
        except Exception:
            continue
    return removed


def _close_live() -> None:
    """At interpreter exit: a stopped container would outlive the app."""
    for host in list(live_hosts.values()):
        try:
            host.close()
        except Exception:
            pass


atexit.register(_close_live)


def _conforms(host: DockerHost, backend: DockerBackend) -> tuple[SandboxHost, SandboxBackend]:
    """Checked by mypy: the Docker classes implement the protocol (no runtime cost)."""
    return host, backend
