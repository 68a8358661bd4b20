"""The `k8s` backend: each session's sandbox is a pod of the project's agent-sandbox warm pool, claimed for the
session and released by deleting the claim.

What runs where: the pod (deploy/k8s/sandbox.yaml: gVisor, a non-root user, a read-only root, no capabilities,
no egress, cgroup limits) runs the supervisor (`python -m agents.executor.remote.supervisor`), started by a pod
exec whose stdin and stdout are the one stream the app talks over; the supervisor starts the worker beside it and
watches it (freezing between steps, its threads, its CPU time, its disk), and relays the worker's frames,
tool calls included, so tools run in the app and the pod needs no network. Files move by exec (files.py):
Kubernetes has no file API. The host id is the claim's name: a chat records it, and another replica (another
backend instance) attaches by it, reaching the same pod and its workspace. A host holds its claim among replicas
as an E2B host holds its sandbox (agents/executor/holds.py, remote/held.py): taken at start and before an attach
starts anything in the pod, renewed while used, released at close; a claim another session holds is not
attached, and a host whose hold was lost never deletes the claim.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
import shutil
import tempfile
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..backend import Capabilities, SandboxHost, SandboxSpec, WorkspaceSpec, attach_mismatch
from ..errors import SandboxError, SandboxStartError
from ..holds import HOLD_TTL_S, Hold, SandboxHolds
from ..remote.held import HoldingBackend, end_held
from .settings import K8sSettings
from .spec_note import spec_from_claim, spec_to_claim

if TYPE_CHECKING:
    from kubernetes import client

    from .claims import ClaimedPod, Claims
    from .exec_stream import ExecStream
    from .host import K8sHost

log = logging.getLogger("agents.executor.k8s")

NOT_INSTALLED = ("the kubernetes package is not installed: pip install -r requirements-remote.txt "
                 "(with -c constraints.txt)")
NO_EXTRA_READ = ("the k8s sandbox cannot read folders of the app's machine (extra_read_paths); put the files in "
                 "the workspace instead")


def configured_settings() -> K8sSettings:
    """The settings the app passed with `configure_host(k8s=...)`, else the defaults (no cluster)."""
    from agents.host_settings import host_settings

    found = host_settings().k8s
    return found if isinstance(found, K8sSettings) else K8sSettings()


class K8sSandboxBackend(HoldingBackend):
    """Sandboxes claimed from a kubernetes-sigs/agent-sandbox warm pool. `settings`: where (None: the ones the
    app configured, read when first needed). `holds`: where its claims are held among replicas (None: the store
    the app configured; remote/held.py)."""

    name = "k8s"
    kind = "k8s"
    #: The supervisor's watch (remote/host.py); no warm start here: the agent-sandbox warm pool is the pool.
    capabilities = Capabilities(suspend=True, thread_check=True, cpu_time=True, disk_usage=True, same_disk=False,
                                attach=True, warm_start=False)

    def __init__(self, settings: K8sSettings | None = None, holds: SandboxHolds | None = None,
                 hold_ttl_s: float = HOLD_TTL_S) -> None:
        super().__init__(holds, hold_ttl_s)
        self._given = settings
        self._lock = threading.Lock()
        self._config: client.Configuration | None = None
        self._claims: Claims | None = None
        self._live: dict[str, K8sHost] = {}  # this instance's hosts by claim (another replica has its own)

    @property
    def settings(self) -> K8sSettings:
        return self._given if self._given is not None else configured_settings()

    def unavailable_reason(self) -> str | None:
        try:
            import kubernetes  # noqa: F401 - only whether it is installed
        except ImportError:
            return NOT_INSTALLED
        return self.settings.missing()

    # --- the cluster -----------------------------------------------------------------------------------------
    def _api(self) -> tuple[client.Configuration, Claims]:
        from kubernetes import client

        from .api import configuration
        from .claims import Claims

        with self._lock:
            if self._config is None or self._claims is None:
                why = self.unavailable_reason()
                if why is not None:
                    raise SandboxStartError(f"the k8s sandbox backend cannot be used: {why}")
                self._config = configuration(self.settings)
                self._claims = Claims(self.settings, client.ApiClient(self._config))
            return self._config, self._claims

    def exec_in(self, pod: str, command: Sequence[str]) -> ExecStream:
        """Start `command` in the pod's sandbox container as a byte stream (a fresh ApiClient per exec)."""
        from kubernetes import client

        from .exec_stream import open_exec

        cfg, _ = self._api()
        s = self.settings
        return open_exec(lambda: client.ApiClient(cfg), s.namespace, pod, s.container, command,
                         s.request_timeout_s)

    def claim(self, spec: SandboxSpec | None = None) -> ClaimedPod:
        """A new claim on the warm pool, bound and with its pod running; the claim is deleted if any step fails.
        `spec`: the worker's settings, recorded on the claim for a replica that attaches later."""
        _, claims = self._api()
        claims.check_pool()
        name, version = claims.create(spec_to_claim(spec) if spec is not None else None)
        try:
            pod = claims.pod_of(name, claims.wait_bound(name, version, self.settings.ready_timeout_s))
            why = claims.pod_running(pod.pod)
            if why is not None:
                raise SandboxStartError(f"the claimed sandbox is not usable: {why}")
            return pod
        except BaseException:
            self.release(name)
            raise

    def find(self, claim: str) -> ClaimedPod:
        """The pod of a live claim this app made (for `attach`)."""
        from .claims import is_claim_name

        if not is_claim_name(claim):
            raise SandboxError(f"{claim[:80]!r} is not a sandbox id of the k8s backend")
        _, claims = self._api()
        pod = claims.claim_of(claim)
        why = claims.pod_running(pod.pod)
        if why is not None:
            raise SandboxError(f"the sandbox {claim} cannot be reattached: {why}")
        return pod

    def release(self, claim: str) -> None:
        """Delete the claim (its sandbox and pod go with it)."""
        _, claims = self._api()
        claims.delete(claim)

    def pod_status(self, pod: str) -> str | None:
        """None while the pod runs, else why not (read when the stream ends, for the message)."""
        _, claims = self._api()
        return claims.pod_running(pod)

    # --- the protocol ----------------------------------------------------------------------------------------
    def start(self, spec: SandboxSpec) -> SandboxHost:
        if spec.workspace is None:
            raise SandboxStartError("the k8s backend starts no sandbox without a workspace: its warm pool is the "
                                    "agent-sandbox SandboxWarmPool (AGENTDECK_K8S_WARM_POOL)")
        if spec.workspace.extra_read_paths:
            raise SandboxStartError(NO_EXTRA_READ)
        pod = self.claim(spec)
        hold = self.hold_new(pod.claim, discard=lambda: self._delete_quietly(pod.claim))  # a new claim: nobody's
        return self._host(pod, spec, hold)

    def attach(self, host_id: str, expect: SandboxSpec | None = None,
               workspace: WorkspaceSpec | None = None) -> SandboxHost:
        """The live host of that claim in this backend instance; else (another replica's sandbox, or this one's
        after its stream was cut) a new supervisor and worker in the claim's pod: the pod's workspace files are
        still there, the variables are not (the caller rebuilds them). The worker gets the settings recorded on
        the claim when it was made. `workspace`: this replica's copy of the workspace (None: a temporary folder,
        removed at close). `expect`: see the protocol; its workspace is used when `workspace` is None; a host live
        in this instance is then refused (the caller is another session). The claim's owner and settings are read
        first, then the claim is held (`SandboxHeldElsewhere` while another session, of this replica or another,
        holds it: nothing is started in its pod). The app does not record a claim in its saved chats
        (`attach_elsewhere` is False): a new worker keeps no variables."""
        with self._lock:
            live = self._live.get(host_id)
        if live is not None and not live.dead:
            if expect is not None:  # a caller that checks is another session: two would share one worker
                raise self.in_use_here(host_id)
            return live
        pod = self.find(host_id)
        spec = spec_from_claim(pod.note)
        if expect is not None:
            why = attach_mismatch(spec, expect)
            if why is not None:
                raise SandboxError(f"the sandbox {host_id} cannot be attached: {why}")
            workspace = workspace or expect.workspace
        return self.attach_held(host_id, lambda hold: self._attach_held(pod, spec, workspace, hold))

    def _attach_held(self, pod: ClaimedPod, spec: SandboxSpec, workspace: WorkspaceSpec | None,
                     hold: Hold) -> SandboxHost:
        """`attach`'s part under this host's hold: a new supervisor and worker in the claim's pod."""
        temporary = None
        if workspace is None:
            temporary = tempfile.mkdtemp(prefix="agentdeck-k8s-")
            workspace = WorkspaceSpec(temporary)
        return self._host(pod, dataclasses.replace(spec, workspace=workspace), hold, temporary=temporary)

    def _delete_quietly(self, claim: str) -> None:
        try:
            self.release(claim)
        except SandboxError as exc:
            log.warning("the SandboxClaim %s was not deleted: %s", claim, exc)

    def _host(self, pod: ClaimedPod, spec: SandboxSpec, hold: Hold, temporary: str | None = None) -> SandboxHost:
        """A host over a new supervisor in the claim's pod, holding `hold`; on failure the claim is deleted (under
        the hold) and the hold released."""
        from ..remote import WORKER_UID, supervisor_command
        from .files import ExecFiles
        from .host import K8sHost

        s = self.settings

        def forget() -> None:
            with self._lock:
                self._live.pop(pod.claim, None)
            if temporary is not None:
                shutil.rmtree(temporary, ignore_errors=True)

        try:
            # A temp folder of its own per supervisor: a host attached after another in the same pod starts
            # with nothing of the old worker's (and the old one's folders belong to the old worker's user).
            tmpdir = f"/tmp/agentdeck-sbx-{secrets.token_hex(6)}"
            stream = self.exec_in(pod.pod, supervisor_command(workdir=s.workdir, python=s.python, tmpdir=tmpdir))
        except BaseException:
            forget()
            end_held(hold, lambda: self._delete_quietly(pod.claim))
            raise
        files = ExecFiles(lambda cmd: self.exec_in(pod.pod, cmd), s.python, s.workdir, owner=WORKER_UID)
        try:
            host = K8sHost(stream, files, pod=pod, pod_status=self.pod_status, spec=spec, hold=hold,
                           delete_claim=lambda: self._delete_quietly(pod.claim), forget=forget,
                           control_timeout_s=s.control_timeout_s)
        except SandboxStartError as exc:
            said = stream.stderr_tail().strip()[-600:]  # the supervisor's own words, before it took over fd 2
            raise SandboxStartError(f"{exc}" + (f"; it printed: {said}" if said else "")) from exc
        with self._lock:
            self._live[pod.claim] = host
        return host
