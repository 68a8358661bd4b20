"""What the app's settings set for the whole process in the libraries it uses: the `agents` library's host
settings (sandbox user ids, the Docker engine, torch's threads, the local-model device and cache). Why here: the
library reads no AGENTDECK_* variable (agents/host_settings.py), so the app hands it its settings once at start."""
from __future__ import annotations

from agents.errors import ConfigurationError
from agents.host_settings import HostSettings, configure_host
from agents.models.compatible import CompatibleServer, operator_server
from ui.config.app_settings import AppSettings
from ui.config.base import SettingsError
from ui.config.sandbox import parse_uid_range


def apply_to_libraries(settings: AppSettings) -> HostSettings:
    """Set the `agents` library's process-wide settings from the app's; returns them."""
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
    )


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
