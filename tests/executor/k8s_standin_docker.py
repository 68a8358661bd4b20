"""The stand-in's pods as Docker containers of the project's sandbox image, configured from deploy/k8s/sandbox.yaml's
pod template: the template's command, user, capabilities, read-only root, volumes (an emptyDir on disk as a
volume, one in memory as a tmpfs of its size), memory limit, and no network (its `egress: []`). An exec is
`docker exec -i` in the container, so the supervisor and its worker run for real, as the template would run
them (gVisor aside: Docker's runtime here). Needs the private Docker daemon (`make docker-up`).

Docker's own seccomp profile is not applied (as in the Docker backend and the remote container stand-in): it
refuses the `unshare` the worker's private view needs; the template asks for the runtime's default profile,
which a cluster's gVisor runtime provides instead.
"""
from __future__ import annotations

import asyncio
import os
import re
from typing import Any

from tests.executor.k8s_standin_pods import Pod

LABEL = "agentdeck.k8s-standin"
_SIZE = re.compile(r"(\d+)(Ki|Mi|Gi)?")
_UNITS = {None: 1, "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3}


def _bytes(quantity: str) -> int:
    found = _SIZE.fullmatch(quantity)
    if found is None:
        raise ValueError(f"the stand-in reads sizes like 256Mi, not {quantity!r}")
    return int(found.group(1)) * _UNITS[found.group(2)]


def container_options(template: dict[str, Any]) -> dict[str, Any]:
    """Docker's options for the template's first container (what the stand-in honours of the pod spec)."""
    pod = template["spec"]["podTemplate"]["spec"]
    container = pod["containers"][0]
    pod_context, context = pod.get("securityContext", {}), container.get("securityContext", {})
    user = context.get("runAsUser", pod_context.get("runAsUser", 0))
    group = context.get("runAsGroup", pod_context.get("runAsGroup", user))
    caps = context.get("capabilities", {})
    volumes = {v["name"]: v.get("emptyDir", {}) for v in pod.get("volumes", [])}
    tmpfs, mounts = {}, []
    for mount in container.get("volumeMounts", []):
        empty = volumes[mount["name"]]
        if empty.get("medium") == "Memory":
            tmpfs[mount["mountPath"]] = f"size={_bytes(empty['sizeLimit'])},mode=1777"
        else:
            mounts.append(mount["mountPath"])
    limits = container.get("resources", {}).get("limits", {})
    security = ["seccomp=unconfined"]
    if context.get("allowPrivilegeEscalation") is False:
        security.append("no-new-privileges")
    return {"command": container["command"], "user": f"{user}:{group}", "cap_drop": caps.get("drop", []),
            "cap_add": caps.get("add", []), "read_only": bool(context.get("readOnlyRootFilesystem")),
            "tmpfs": tmpfs, "anonymous_volumes": mounts, "mem_limit": _bytes(limits["memory"]),
            "network_mode": "none", "security_opt": security}


class DockerPods:
    """`PodRuntime` on the private Docker daemon: one container of the sandbox image per pod."""

    def __init__(self) -> None:
        from agents.executor.docker import daemon, image

        self.started: set[str] = set()
        self.client = daemon.connect()
        built = image.ensure_image(self.client)
        # A tag of its own: another test process building a newer sandbox image removes the older
        # agentdeck-sandbox tags (image.remove_stale), which would leave these pods without their image.
        self.image = f"agentdeck-k8s-standin:{os.getpid()}"
        self.client.images.get(built).tag(self.image)
        self._env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "DOCKER_HOST": daemon.docker_host(),
                     "HOME": os.environ.get("HOME", "/tmp")}

    async def start(self, pod: Pod, template: dict[str, Any]) -> None:
        options = container_options(template)
        volumes = {path: {} for path in options.pop("anonymous_volumes")}

        def run() -> Any:
            from docker.types import Mount  # type: ignore[import-untyped]

            return self.client.containers.run(
                self.image, detach=True, labels={LABEL: "1"}, pids_limit=200, init=True,
                mounts=[Mount(path, None, type="volume") for path in volumes], **options)

        container = await asyncio.get_running_loop().run_in_executor(None, run)
        pod.container = container.id
        self.started.add(container.id)

    async def exec(self, pod: Pod, command: list[str]) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            "docker", "exec", "-i", str(pod.container), *command, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=self._env, start_new_session=True)

    def close(self) -> None:
        """Remove this process's tag (the image stays while the sandbox tag has it)."""
        try:
            self.client.images.remove(self.image, noprune=False)
        except Exception:
            pass

    async def stop(self, pod: Pod) -> None:
        if pod.container is None:
            return
        cid, pod.container = pod.container, None

        def remove() -> None:
            try:
                self.client.containers.get(cid).remove(force=True, v=True)
            except Exception:
                pass

        await asyncio.get_running_loop().run_in_executor(None, remove)


_shared: Any = None


def _shared_standin() -> Any:
    """One stand-in with Docker pods per test process (stopped at exit), for the per-backend suites."""
    global _shared
    if _shared is None:
        import atexit

        from tests.executor.k8s_standin import K8sStandIn

        pods = DockerPods()
        _shared = K8sStandIn(pods).start()
        atexit.register(pods.close)
        atexit.register(_shared.stop)
    return _shared


def standin_backend() -> Any:
    """The `k8s` backend on the shared stand-in, as the test-only backend `k8s-standin`
    (AGENTDECK_TEST_BACKENDS=k8s-standin runs the per-backend suites on it)."""
    from agents.executor.k8s import K8sSandboxBackend
    from agents.executor.k8s.settings import K8sSettings

    class StandInK8sBackend(K8sSandboxBackend):
        name = "k8s-standin"

        def __init__(self) -> None:
            server = _shared_standin()
            config = server.kubeconfig(server.folder / "kubeconfig")
            super().__init__(K8sSettings(kubeconfig=str(config), ready_timeout_s=180))

    return StandInK8sBackend()


StandInK8sBackend = standin_backend
