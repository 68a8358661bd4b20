"""Reaching the cluster: a kubernetes client configuration from the backend's settings, never a global one.

Why not `kubernetes.config.load_kube_config()` as is: it changes the client library's process-wide default,
which another part of the program (or a second backend with other settings) may rely on; each backend keeps its
own `Configuration` and makes `ApiClient`s from it.
"""

from __future__ import annotations

from kubernetes import client, config

from ..errors import SandboxStartError
from .settings import K8sSettings


def configuration(settings: K8sSettings) -> client.Configuration:
    """The client configuration the settings name (the in-cluster service account, or a kubeconfig file and
    context); `SandboxStartError` naming the setting when it cannot be loaded."""
    cfg = client.Configuration()
    try:
        if settings.in_cluster:
            config.load_incluster_config(client_configuration=cfg)
        else:
            config.load_kube_config(config_file=settings.kubeconfig, context=settings.context,
                                    client_configuration=cfg, persist_config=False)
    except (config.ConfigException, OSError, ValueError, TypeError) as exc:
        where = "the in-cluster service account" if settings.in_cluster else \
            f"the kubeconfig {settings.kubeconfig!r} (AGENTDECK_K8S_KUBECONFIG, AGENTDECK_K8S_CONTEXT)"
        raise SandboxStartError(f"cannot load {where}: {exc}") from exc
    return cfg
