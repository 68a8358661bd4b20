"""One session's sandbox on the cluster: a SandboxClaim against the project's warm pool, waited for until it is
bound to a ready Sandbox, the pod behind it, and the claim's deletion.

Why a claim and not a pod of our own: the agent-sandbox controller (kubernetes-sigs/agent-sandbox) hands a
pre-started pod from the warm pool to the claim (deploy/k8s/sandbox.yaml: gVisor, non-root, no egress, limits),
so the app never needs the right to create pods, only to claim, read and exec. Deleting the claim deletes the
sandbox and its pod. Every answer of the API is checked for shape (a name that is not a DNS label is refused):
what comes back names the pod the app will exec into.
"""

from __future__ import annotations

import dataclasses
import re
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ..errors import SandboxError, SandboxStartError
from . import settings as names
from .settings import K8sSettings
from .spec_note import ANNOTATION

#: Ready=False reasons the claim controller does not retry (its computeReadyCondition): waiting cannot help.
TERMINAL_REASONS = frozenset({"TemplateNotFound", "WarmPoolNotFound", "InvalidMetadata",
                              "EnvVarsInjectionRejected", "VolumeClaimTemplatesError", "ClaimExpired",
                              "SandboxExpired"})
#: A backstop: the claim expires (and its sandbox with it) this long after it was made even if the app that made
#: it dies without deleting it. Far longer than a session; close() deletes it long before.
CLAIM_LIFETIME = timedelta(hours=24)
TRANSIENT_STATUS = frozenset({0, 429, 500, 502, 503, 504})  # 0: the client's own (a connection dropped)
WATCH_CHUNK_S = 20  # one watch request's server-side timeout; the wait loops until its own deadline
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_CLAIM_NAME = re.compile(r"agentdeck-[0-9a-f]{16}")


class ClaimRefused(SandboxStartError):
    """The cluster refused or could not give the claim (quota, rights, a missing pool); the message says which
    setting or which cluster object to look at."""


class SandboxGone(SandboxError):
    """The claim, its sandbox or its pod no longer exists (deleted, expired, evicted)."""


@dataclass(frozen=True)
class ClaimedPod:
    """Where a claim landed: the claim (the backend's host id), its Sandbox and the pod to exec into."""

    claim: str
    sandbox: str
    pod: str
    note: str | None = None  # the worker's settings recorded on the claim (spec_note.py)


def is_claim_name(text: str) -> bool:
    """Whether `text` is a claim name this backend makes (what `attach` accepts: nothing else is looked up)."""
    return bool(_CLAIM_NAME.fullmatch(text))


def _dns_label(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _DNS_LABEL.fullmatch(value):
        raise SandboxStartError(f"the cluster gave an invalid {what} name: {str(value)[:80]!r}")
    return value


def _api_message(exc: ApiException) -> str:
    """The API server's own message (a Status object's `message`), short; else the HTTP reason."""
    import json

    try:
        body = json.loads(exc.body or "")
        message = body.get("message") if isinstance(body, dict) else None
    except (ValueError, TypeError):
        message = None
    return str(message or exc.reason or "no reason given")[:300]


class Claims:
    """The claim-side API calls of one backend (thread-safe: the kubernetes client's ApiClient is)."""

    def __init__(self, settings: K8sSettings, api_client: client.ApiClient) -> None:
        self.settings = settings
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self._pool_checked = False

    # --- the calls ------------------------------------------------------------------------------------------
    def _where(self) -> str:
        return f"namespace {self.settings.namespace!r} (AGENTDECK_K8S_NAMESPACE)"

    def _unreachable(self, exc: Exception) -> ClaimRefused:
        host = self.custom.api_client.configuration.host
        return ClaimRefused(f"cannot reach the Kubernetes API server at {host} ({type(exc).__name__}): check "
                            f"AGENTDECK_K8S_KUBECONFIG / AGENTDECK_K8S_IN_CLUSTER")

    def check_pool(self) -> None:
        """Once per backend: the warm pool exists and draws from the configured template (a pool pointed at
        another template would hand out pods without the limits the app relies on)."""
        if self._pool_checked:
            return
        s = self.settings
        try:
            pool = self.custom.get_namespaced_custom_object(
                names.CLAIM_GROUP, names.API_VERSION, s.namespace, "sandboxwarmpools", s.warm_pool,
                _request_timeout=s.request_timeout_s)
        except ApiException as exc:
            if exc.status == 404:
                raise ClaimRefused(f"there is no SandboxWarmPool {s.warm_pool!r} in {self._where()}: apply "
                                   f"deploy/k8s/sandbox.yaml or set AGENTDECK_K8S_WARM_POOL") from exc
            raise ClaimRefused(f"reading the SandboxWarmPool {s.warm_pool!r} was refused ({exc.status}: "
                               f"{_api_message(exc)}): the app's service account needs get on "
                               f"sandboxwarmpools in {self._where()}") from exc
        except HTTPError as exc:
            raise self._unreachable(exc) from exc
        spec = pool.get("spec") if isinstance(pool, dict) else None
        ref = spec.get("sandboxTemplateRef") if isinstance(spec, dict) else None
        template = ref.get("name") if isinstance(ref, dict) else None
        if template != s.template:
            raise ClaimRefused(f"the SandboxWarmPool {s.warm_pool!r} draws from the template {template!r}, not "
                               f"{s.template!r} (AGENTDECK_K8S_TEMPLATE): refusing its sandboxes")
        self._pool_checked = True

    def create(self, note: str | None = None) -> tuple[str, str]:
        """Make a claim on the warm pool, with `note` (the worker's settings) as an annotation; returns its name
        and resourceVersion (where the wait's watch starts)."""
        s = self.settings
        name = f"agentdeck-{secrets.token_hex(8)}"
        expires = (datetime.now(UTC) + CLAIM_LIFETIME).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "apiVersion": f"{names.CLAIM_GROUP}/{names.API_VERSION}",
            "kind": "SandboxClaim",
            "metadata": {"name": name, "labels": {names.MANAGED_BY_LABEL: names.MANAGED_BY,
                                                  names.CREATED_BY_LABEL: names.MANAGED_BY},
                         "annotations": {ANNOTATION: note} if note is not None else {}},
            "spec": {"warmPoolRef": {"name": s.warm_pool},
                     "lifecycle": {"shutdownTime": expires, "shutdownPolicy": "Delete"}},
        }
        try:
            made = self.custom.create_namespaced_custom_object(
                names.CLAIM_GROUP, names.API_VERSION, s.namespace, names.CLAIMS, body,
                _request_timeout=s.request_timeout_s)
        except ApiException as exc:
            message = _api_message(exc)
            if exc.status == 403:
                why = ("the namespace's quota is spent" if "quota" in message.lower() else
                       "the app's service account may not create sandboxclaims there")
                raise ClaimRefused(f"the cluster refused a SandboxClaim in {self._where()}: {why} (403: "
                                   f"{message})") from exc
            if exc.status == 404:
                raise ClaimRefused(f"the SandboxClaim API ({names.CLAIM_GROUP}/{names.API_VERSION}) or "
                                   f"{self._where()} does not exist: install kubernetes-sigs/agent-sandbox's "
                                   f"extensions and apply deploy/k8s/ ({message})") from exc
            raise ClaimRefused(f"the cluster refused a SandboxClaim in {self._where()} ({exc.status}: "
                               f"{message})") from exc
        except HTTPError as exc:
            raise self._unreachable(exc) from exc
        version = (made.get("metadata") or {}).get("resourceVersion") if isinstance(made, dict) else None
        return name, str(version or "")

    def wait_bound(self, name: str, resource_version: str, timeout_s: float) -> str:
        """Watch the claim until it is Ready and names its Sandbox; returns the Sandbox's name. `ClaimRefused`
        on a reason the controller will not retry, on deletion, or after `timeout_s`."""
        s = self.settings
        deadline = time.monotonic() + timeout_s
        version = resource_version
        last = "no status yet"
        while (remaining := deadline - time.monotonic()) > 0:
            w = watch.Watch()
            chunk = max(1, min(WATCH_CHUNK_S, int(remaining)))
            try:
                for event in w.stream(self.custom.list_namespaced_custom_object, names.CLAIM_GROUP,
                                      names.API_VERSION, s.namespace, names.CLAIMS,
                                      field_selector=f"metadata.name={name}", resource_version=version,
                                      timeout_seconds=chunk, _request_timeout=chunk + s.request_timeout_s):
                    kind = event.get("type") if isinstance(event, dict) else None
                    obj = event.get("object") if isinstance(event, dict) else None
                    if kind == "DELETED":
                        raise ClaimRefused(f"the SandboxClaim {name} was deleted while the app waited for it")
                    if kind not in ("ADDED", "MODIFIED") or not isinstance(obj, dict):
                        continue
                    version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                    found, last = self._bound(name, obj)
                    if found:
                        w.stop()
                        return found
                    if time.monotonic() > deadline:
                        break
            except ApiException as exc:
                if exc.status == 410:  # the version was compacted away: start again from the current state
                    version = ""
                    continue
                if exc.status in TRANSIENT_STATUS:  # a dropped watch or a busy API server: watch again
                    last = f"the watch broke ({exc.status}: {_api_message(exc)[:80]})"
                    threading.Event().wait(min(1.0, max(0.0, deadline - time.monotonic())))
                    continue
                raise ClaimRefused(f"watching the SandboxClaim {name} failed ({exc.status}: "
                                   f"{_api_message(exc)})") from exc
            except HTTPError as exc:
                raise self._unreachable(exc) from exc
            finally:
                w.stop()
        raise ClaimRefused(f"the SandboxClaim {name} was not ready within {timeout_s:.0f} s ({last}): the warm "
                           f"pool {s.warm_pool!r} may be empty or its pods unschedulable; raise its replicas "
                           f"or AGENTDECK_K8S_READY_TIMEOUT_S")

    def _bound(self, name: str, claim: dict[str, Any]) -> tuple[str | None, str]:
        status = claim.get("status")
        if not isinstance(status, dict):
            return None, "no status yet"
        ready, last = False, "not ready"
        for cond in status.get("conditions") or ():
            if not isinstance(cond, dict) or cond.get("type") != "Ready":
                continue
            reason = str(cond.get("reason") or "")[:80]
            message = str(cond.get("message") or "")[:200]
            if cond.get("status") == "True":
                ready = True
            elif reason in TERMINAL_REASONS:
                raise ClaimRefused(f"the SandboxClaim {name} failed: {reason}: {message} (warm pool "
                                   f"{self.settings.warm_pool!r}, AGENTDECK_K8S_WARM_POOL)")
            else:
                last = f"Ready=False: {reason} {message}".strip()
        sandbox = status.get("sandbox")
        sandbox_name = sandbox.get("name") if isinstance(sandbox, dict) else None
        if ready and sandbox_name:
            return _dns_label(sandbox_name, "sandbox"), "ready"
        return None, last

    def pod_of(self, claim: str, sandbox: str) -> ClaimedPod:
        """The pod behind a bound claim: the Sandbox's pod-name annotation (a warm pod it adopted) or its name."""
        s = self.settings
        try:
            obj = self.custom.get_namespaced_custom_object(names.SANDBOX_GROUP, names.API_VERSION, s.namespace,
                                                           names.SANDBOXES, sandbox,
                                                           _request_timeout=s.request_timeout_s)
        except ApiException as exc:
            if exc.status == 404:
                raise SandboxGone(f"the Sandbox {sandbox} of claim {claim} is gone") from exc
            raise ClaimRefused(f"reading the Sandbox {sandbox} failed ({exc.status}: {_api_message(exc)}): the "
                               f"app's service account needs get on sandboxes in {self._where()}") from exc
        except HTTPError as exc:
            raise self._unreachable(exc) from exc
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        notes = meta.get("annotations") if isinstance(meta, dict) else None
        pod = (notes or {}).get(names.POD_NAME_ANNOTATION) if isinstance(notes, dict) else None
        return ClaimedPod(claim, sandbox, _dns_label(pod or sandbox, "pod"))

    def claim_of(self, claim: str) -> ClaimedPod:
        """A live claim's pod, for `attach` (another replica's claim): refuses one that is not bound and ready."""
        s = self.settings
        try:
            obj = self.custom.get_namespaced_custom_object(names.CLAIM_GROUP, names.API_VERSION, s.namespace,
                                                           names.CLAIMS, claim,
                                                           _request_timeout=s.request_timeout_s)
        except ApiException as exc:
            if exc.status == 404:
                raise SandboxGone(f"the SandboxClaim {claim} is gone (closed, expired or deleted)") from exc
            raise SandboxError(f"reading the SandboxClaim {claim} failed ({exc.status}: "
                               f"{_api_message(exc)})") from exc
        except HTTPError as exc:
            raise self._unreachable(exc) from exc
        if not isinstance(obj, dict):
            raise SandboxGone(f"the SandboxClaim {claim} has no readable status")
        found = obj.get("metadata")
        meta: dict[str, Any] = found if isinstance(found, dict) else {}
        labels = meta.get("labels") or {}
        if not isinstance(labels, dict) or labels.get(names.MANAGED_BY_LABEL) != names.MANAGED_BY:
            raise SandboxError(f"the SandboxClaim {claim} was not made by this app")
        sandbox, last = self._bound(claim, obj)
        if sandbox is None:
            raise SandboxGone(f"the SandboxClaim {claim} is not ready ({last})")
        notes = meta.get("annotations")
        note = notes.get(ANNOTATION) if isinstance(notes, dict) else None
        return dataclasses.replace(self.pod_of(claim, sandbox), note=note if isinstance(note, str) else None)

    def pod_running(self, pod: str) -> str | None:
        """None while the pod runs; else why not (gone, or its phase)."""
        s = self.settings
        try:
            obj = self.core.read_namespaced_pod(pod, s.namespace, _request_timeout=s.request_timeout_s)
        except ApiException as exc:
            if exc.status == 404:
                return f"the pod {pod} is gone (evicted, deleted or its node lost)"
            return f"the pod {pod} could not be read ({exc.status}: {_api_message(exc)})"
        except HTTPError as exc:
            return f"the Kubernetes API server did not answer ({type(exc).__name__})"
        phase = getattr(getattr(obj, "status", None), "phase", None)
        return None if phase == "Running" else f"the pod {pod} is {phase or 'in an unknown phase'}"

    def delete(self, claim: str) -> None:
        """Delete the claim (and with it the sandbox and its pod); a claim already gone is fine."""
        s = self.settings
        try:
            self.custom.delete_namespaced_custom_object(names.CLAIM_GROUP, names.API_VERSION, s.namespace,
                                                        names.CLAIMS, claim,
                                                        _request_timeout=s.request_timeout_s)
        except ApiException as exc:
            if exc.status != 404:
                raise SandboxError(f"deleting the SandboxClaim {claim} failed ({exc.status}: "
                                   f"{_api_message(exc)})") from exc
        except HTTPError as exc:
            raise SandboxError(f"deleting the SandboxClaim {claim} failed: the API server did not answer "
                               f"({type(exc).__name__})") from exc
