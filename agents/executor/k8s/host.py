"""A k8s sandbox's host: the remote `SupervisedHost` holding its claim among replicas (`HeldHost`), plus what the
cluster says when its stream ends.

Why the hold: another replica attaches a claim by its name and starts its own supervisor and worker in the pod;
two sessions driving one pod's workspace, or one deleting the claim the other uses, is what the hold prevents.
A host whose hold was lost (another session holds the claim now) sends no more steps and, at close, ends its own
supervisor (each host has its own) but leaves the claim to its holder.

Why the cluster's word: when the exec stream ends, the supervisor can no longer say how (the pod may be gone with
it). The person and the agent should learn whether the pod was evicted or deleted, or only the connection was cut
(the pod still runs, and a new host can attach to it), so `exit_description` asks the API server about the pod
once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..remote.held import HeldHost
from .claims import ClaimedPod
from .exec_stream import ExecStream

log = logging.getLogger("agents.executor.k8s")


class K8sHost(HeldHost):
    """`SupervisedHost` over a pod exec; `pod_status(pod)` is None while the pod runs, else why not. At close,
    `delete_claim()` runs under the hold (`HeldHost._end_held`), then `forget()` (the backend's bookkeeping)."""

    kind = "k8s"

    def __init__(self, stream: ExecStream, files: Any, *, pod: ClaimedPod,
                 pod_status: Callable[[str], str | None], delete_claim: Callable[[], None],
                 forget: Callable[[], None], **kwargs: Any) -> None:
        self._exec = stream
        self._pod = pod
        self._pod_status = pod_status
        self._delete_claim = delete_claim
        self._forget = forget
        self._cluster_says: str | None = None
        super().__init__(stream, files, host_id=pod.claim, on_close=self._end_claim, **kwargs)

    def _end_claim(self) -> None:
        try:
            self._end_held(self._delete_claim)
        finally:
            self._forget()

    def _let_go(self) -> None:
        """The claim is another session's now: it is not deleted (this host's own supervisor ends at close)."""
        log.info("the SandboxClaim %s is held by another session: this host leaves it", self.id)
        self.let_go = True

    def exit_description(self, wait_s: float = 1.0) -> str:
        text = super().exit_description(wait_s)
        ended = self._exec.ended()
        if ended is None:
            return text
        if self._cluster_says is None:
            why = self._pod_status(self._pod.pod)
            self._cluster_says = why or (f"the pod {self._pod.pod} still runs: only the connection was lost "
                                         f"(the sandbox {self._pod.claim} can be attached again)")
        return f"{text} ({ended[1]}; {self._cluster_says})"
