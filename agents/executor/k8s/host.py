"""A k8s sandbox's host: the remote `SupervisedHost`, plus what the cluster says when its stream ends.

Why: when the exec stream ends, the supervisor can no longer say how (the pod may be gone with it). The person
and the agent should learn whether the pod was evicted or deleted, or only the connection was cut (the pod still
runs, and a new host can attach to it), so `exit_description` asks the API server about the pod once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..remote import SupervisedHost
from .claims import ClaimedPod
from .exec_stream import ExecStream


class K8sHost(SupervisedHost):
    """`SupervisedHost` over a pod exec; `pod_status(pod)` is None while the pod runs, else why not."""

    def __init__(self, stream: ExecStream, files: Any, *, pod: ClaimedPod,
                 pod_status: Callable[[str], str | None], **kwargs: Any) -> None:
        self._exec = stream
        self._pod = pod
        self._pod_status = pod_status
        self._cluster_says: str | None = None
        super().__init__(stream, files, host_id=pod.claim, **kwargs)

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
