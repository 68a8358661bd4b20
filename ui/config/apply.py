"""What the app's settings set for the whole process in the libraries it uses: the `agents` library's host
settings (sandbox user ids, the Docker engine, torch's threads, the local-model device and cache). Why here: the
library reads no AGENTDECK_* variable (agents/host_settings.py), so the app hands it its settings once at start."""
from __future__ import annotations

import os

from agents.errors import ConfigurationError
from agents.executor.e2b.settings import E2BSettings
from agents.executor.k8s.settings import K8sSettings
from agents.host_settings import HostSettings, configure_host
from agents.models.compatible import CompatibleServer, operator_server
from tools._common import configure_user_agent
from tools.registry import ToolSettings
from ui.config.app_settings import AppSettings
from ui.config.base import SettingsError
from ui.config.sandbox import parse_uid_range


def apply_to_libraries(settings: AppSettings) -> HostSettings:
    """Set the `agents` library's process-wide settings (and the tools' User-Agent) from the app's; returns them."""
    configure_user_agent(settings.user_agent)
    return configure_host(
        sandbox_uids=parse_uid_range(settings.sandbox_uids),
        docker_host=settings.docker_host or None,
        docker_image=settings.docker_image or None,
        docker_cpus=settings.docker_cpus,
        dockerd_dir=settings.dockerd_dir,
        torch_threads=settings.torch_threads,
        device=settings.device or None,
        cache_dir=settings.cache_dir or None,
        compatible_server=compatible_server(settings),
        e2b=e2b_settings(settings),
        k8s=k8s_settings(settings),
    )


def e2b_settings(settings: AppSettings) -> E2BSettings:
    """The `e2b` backend's settings from AGENTDECK_E2B_TEMPLATE, _TIMEOUT_S, _DOMAIN, _API_URL and E2B's own
    `E2B_API_KEY` (the SDK's convention, read here once so the library reads no environment)."""
    return E2BSettings(template=settings.e2b_template.strip(), api_key=os.environ.get("E2B_API_KEY") or None,
                       timeout_s=settings.e2b_timeout_s, domain=settings.e2b_domain.strip() or None,
                       api_url=settings.e2b_api_url.strip() or None)


def k8s_settings(settings: AppSettings) -> K8sSettings:
    """The `k8s` backend's cluster, namespace, warm pool and template from the AGENTDECK_K8S_KUBECONFIG
    family of settings."""
    return K8sSettings(kubeconfig=settings.k8s_kubeconfig.strip() or None,
                       context=settings.k8s_context.strip() or None, in_cluster=settings.k8s_in_cluster,
                       namespace=settings.k8s_namespace.strip(), warm_pool=settings.k8s_warm_pool.strip(),
                       template=settings.k8s_template.strip(), container=settings.k8s_container.strip(),
                       ready_timeout_s=settings.k8s_ready_timeout_s)


def compatible_server(settings: AppSettings) -> CompatibleServer | None:
    """The operator's OpenAI-compatible server from AGENTDECK_OPENAI_BASE_URL, _API_KEY and _MODELS, or None when no
    address is set."""
    if not settings.openai_base_url.strip():
        return None
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key is not None else None
    try:
        return operator_server(settings.openai_base_url, key, tuple(settings.openai_models or ()))
    except ConfigurationError as exc:
        raise SettingsError([str(exc)]) from exc


def tool_settings(settings: AppSettings) -> ToolSettings:
    """What the tool registry is built with, from the app's checked settings (AGENTDECK_TOOLS_PATH, _MCP_SERVERS,
    _DISABLED_TOOLS, _HUB_TOOLS, _HUB_TOOLS_NO_APPROVAL, _ALLOW_PRIVATE_URLS, _WIKIPEDIA_URL, _STT_MODEL). Why:
    `ToolSettings.from_env()` parses the same variables its own way (a library's convenience), so a value the
    start-up check refused or read one way could be read another way by the registry."""
    return ToolSettings(
        allow_private_urls=settings.allow_private_urls,
        wikipedia_url=settings.wikipedia_url.strip() or None,
        stt_model=settings.stt_model.strip() or None,
        tools_path=settings.tools_path.strip() or None,
        mcp_servers=settings.mcp_servers.strip() or None,
        disabled_tools=frozenset(settings.disabled_tools),
        hub_tools=settings.hub_tools.strip() or None,
        hub_tools_no_approval=frozenset(settings.hub_tools_no_approval),
        hub_endpoint=os.environ.get("HF_ENDPOINT") or None,  # huggingface_hub's own convention, not a setting
    )
