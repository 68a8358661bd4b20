"""Serving AgentDeck: `create_app` puts the app together (services, the chat's handlers, the page) and
`launch` serves it (start-up checks, the reaper, the queue, signals). `python app.py` calls both.
"""
from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from typing import Any

import gradio as gr
from starlette.middleware import Middleware

from agents.telemetry import configure_from_environment as configure_tracing
from ui.app import ASSETS, AgentDeckApp
from ui.layout import CSS, build_blocks
from ui.saved.data_folder import secret_file, storage_is_ephemeral
from ui.services import Services
from ui.session.heap import freeze_long_lived_objects
from ui.session.presence import PRESENCE, PagePresence, PresenceMiddleware
from ui.settings import AppConfig
from ui.shared.choose import open_shared_state
from ui.web.body_limit import BodyLimitMiddleware
from ui.web.disk_floor import DiskFloorMiddleware
from ui.web.gradio_callers import AbsoluteFileUrlMiddleware
from ui.web.gradio_compat import (
    cap_upload_fields,
    check_version,
    private_uploads,
    refuse_remote_files,
)
from ui.web.login_guard import guard_login_routes
from ui.web.login_throttle import LoginThrottleMiddleware
from ui.web.mcp_mode import take_mcp_switch
from ui.web.metrics import MetricsConfig, MetricsMiddleware
from ui.web.metrics import start as start_metrics
from ui.web.rate_limit import stop_uvicorn_trusting_loopback_proxies
from ui.web.security_headers import SecurityHeadersMiddleware
from ui.web.sign_in import build_page


def check_sandbox_backend(name: str) -> None:
    """Refuse to start on a sandbox backend this machine cannot use (AGENTDECK_SANDBOX), saying why."""
    from agents.executor import backends

    why = backends.unavailable_reason(name)
    if why is not None:
        raise SystemExit(f"AGENTDECK_SANDBOX={name}: {why} (usable here: {', '.join(backends.available()) or 'none'})")


def create_app(config: AppConfig | None = None) -> tuple[gr.Blocks, AgentDeckApp]:
    """The page and its handlers: the services, the chat's handlers, and the layout that composes the panels."""
    config = config or AppConfig.from_env()
    if config.settings is not None:  # the agents library's process-wide settings (it reads no AGENTDECK_*)
        from ui.config.apply import apply_to_libraries

        apply_to_libraries(config.settings)
    check_sandbox_backend(config.sandbox)  # at start, not at a visitor's first step
    if config.sandbox_pool > 0:  # a sandbox ready before the first visitor's first step
        from ui.agent_factory import warm_up_sandboxes

        warm_up_sandboxes(config)
    refuse_remote_files()  # files come in as uploads only (Gradio would fetch one an event names by URL)
    private_uploads()  # each upload in a folder no other visitor can name (Gradio's is the content's hash)
    cap_upload_fields()  # the upload route keeps no form field past 64 KB in memory (Gradio's parser has no cap)
    controller = AgentDeckApp(config)
    # Without the sign-in button if Gradio's local mock of the login fails (ui/web/sign_in.py).
    demo = build_page(config, lambda: build_blocks(controller))
    if storage_is_ephemeral(config.data_dir):  # visitors are told chats may be lost; the remedy is the operator's
        logging.getLogger("agentdeck").warning(
            "AgentDeck: saved chats are in %s, which is not persistent storage on this Space: they are lost when "
            "it restarts. Mount a Storage Bucket: make space SPACE=%s ARGS=\"--bucket auto\".",
            config.data_dir, os.environ.get("SPACE_ID") or "user/name")
    return demo, controller


def launch_kwargs(config: AppConfig, mcp_services: Services | None = None,
                  presence: PagePresence = PRESENCE) -> dict[str, Any]:
    """Arguments for demo.launch(): theme/css (Gradio 6 takes them here), auth, file access, threads. With
    `mcp_services`, the app's MCP endpoint at /gradio_api/mcp/ (ui/mcp/), inside the body limit. `presence`:
    the app's count of open pages (its registry's), which the heartbeat middleware keeps."""
    kwargs: dict[str, Any] = {
        "css": CSS,
        "theme": gr.themes.Soft(primary_hue="indigo"),
        # Only the bundled example files are served from where they lie. The data dir (workspaces, saved chats)
        # is not served at all: the browser gets published copies of the files it shows (ui/chat/published_files.py).
        "allowed_paths": [str(ASSETS)],
        "max_threads": max(40, 2 * config.max_runs + 8),
        "footer_links": ["api", "settings"],
        # Gradio refuses bigger uploads itself, before they are stored (the app's own check comes later).
        "max_file_size": config.max_upload_bytes,
        "mcp_server": False,  # Gradio's MCP mode cannot run with the pinned mcp SDK: ours answers (ui/web/mcp_mode.py)
        "app_kwargs": {"middleware": [Middleware(SecurityHeadersMiddleware),
                                      Middleware(BodyLimitMiddleware, max_bytes=config.max_request_bytes),
                                      Middleware(MetricsMiddleware,
                                                 token=MetricsConfig.from_settings(config.settings).token),
                                      Middleware(PresenceMiddleware, presence=presence),
                                      Middleware(AbsoluteFileUrlMiddleware),
                                      Middleware(DiskFloorMiddleware, min_free_mb=config.min_free_mb,
                                                 upload_bytes_per_hour=config.upload_mb_per_hour * 2**20,
                                                 state=open_shared_state(config.redis_url) if config.redis_url
                                                 else None)]},
        # The data dir is allowed (above) but its signing secret must never be served.
        "blocked_paths": [str(secret_file(config.data_dir))],
    }
    if mcp_services is not None:
        from ui.mcp.endpoint import McpEndpointMiddleware, build_server

        kwargs["app_kwargs"]["middleware"].insert(2, Middleware(McpEndpointMiddleware, services=mcp_services,
                                                                server=build_server(mcp_services)))
    if config.auth:
        kwargs["auth"] = config.auth
        kwargs["auth_message"] = ("AgentDeck: sign in with the username and password the server was started with. "
                                  "After several wrong passwords sign-in pauses for a while (up to 15 minutes).")
        # Gradio checks every password it is sent: wrong ones slow down, then lock out (ui/web/login_throttle.py).
        kwargs["app_kwargs"]["middleware"].append(Middleware(LoginThrottleMiddleware))
    return kwargs


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def launch(config: AppConfig | None = None, app: tuple[gr.Blocks, AgentDeckApp] | None = None,
           **overrides: Any) -> tuple[gr.Blocks, AgentDeckApp]:
    """Serve the app (built here unless `app` is the pair `create_app` returned)."""
    check_version()
    serve_mcp = take_mcp_switch(overrides)  # GRADIO_MCP_SERVER / mcp_server=True: ours, not Gradio's (mcp_mode.py)
    config = config or (app[1].config if app else AppConfig.from_env())
    demo, controller = app or create_app(config)
    controller.registry.start_reaper()
    # Off unless AGENTDECK_METRICS_PORT or AGENTDECK_METRICS_TOKEN is set (ui/web/metrics.py).
    start_metrics(MetricsConfig.from_settings(config.settings), controller.registry)
    configure_tracing()  # OTEL_* read now, so a wrong setting stops the start (agents/telemetry/setup.py)
    freeze_long_lived_objects()  # after every import and the app itself: see ui/session/heap.py
    # Many threads share this process's GIL: an agent loop and an event drain per run, Gradio's event loop and
    # its workers. Handing the GIL over every 1 ms instead of 5 ms lets a drain or the event loop get in
    # sooner when many runs finish a step at once (bench/ui_load.py: the p95 with 16 sessions).
    sys.setswitchinterval(0.001)
    demo.queue(default_concurrency_limit=1)
    if threading.current_thread() is threading.main_thread():
        # SIGTERM (a Space restarting, `kill`) ends the process through SystemExit, so exit handlers run and
        # the sandbox workers, stopped between steps, are killed with it (agents/executor/local/process.py).
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    kwargs = launch_kwargs(config, mcp_services=controller.services if serve_mcp else None,
                           presence=controller.registry.presence)
    kwargs.update(overrides)
    if serve_mcp:
        logging.getLogger("agentdeck").warning("AgentDeck: MCP server at /gradio_api/mcp/ (streamable HTTP)")
    stop_uvicorn_trusting_loopback_proxies()  # the peer is the socket's unless a proxy is trusted
    # a login that tells visitors apart (Gradio attaches its routes in launch)
    guard_login_routes(demo.expects_oauth, kwargs.get("server_name"), share=kwargs.get("share"))
    demo.launch(**kwargs)
    return demo, controller
