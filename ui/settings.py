"""App configuration (environment) and per-session run settings (the settings panel), checked against what the
operator allows: a visitor sends them (form or API), so they are hostile input. What models and tools are offered:
ui/model_choice.py and ui/tool_offer.py; the agent built from the settings: ui/agent_factory.py.

Environment variables:
  AGENTDECK_MODEL              default model string (e.g. "embedded", "openai/gpt-4.1-mini", "replay:path.yaml")
  AGENTDECK_DATA_DIR           saved chats and workspaces (default ./data beside app.py; on a Space with
                               persistent storage /data/agentdeck)
  AGENTDECK_SECRET             signs saved chats (default: a random secret kept in <data dir>/secret, or in the
                               chat store when AGENTDECK_CHAT_STORE is set: one secret for every replica)
  AGENTDECK_CHAT_STORE         where saved chats' files live (default: the data dir; s3://bucket/prefix for object
                               storage that several replicas share, its server from AWS_ENDPOINT_URL; another
                               fsspec URL such as hf://buckets/... for one replica)
  AGENTDECK_REDIS_URL          Redis for leases, page presence, deleted-chat tombstones and the visitors' limits,
                               shared by several replicas (default: none, kept in the process's memory)
  AGENTDECK_AUTHORIZED_IMPORTS comma-separated extra imports for the code agent (default: data-analysis set)
  AGENTDECK_MAX_STEPS          default max steps (10)
  AGENTDECK_MAX_UPLOAD_MB      upload size limit per file (50)
  AGENTDECK_MAX_MESSAGE_CHARS  characters one chat message may have (100000; 0: no limit)
  AGENTDECK_MAX_REQUEST_MB     bytes one request body may have, uploads aside (2; at least what a message of
                               AGENTDECK_MAX_MESSAGE_CHARS needs)
  AGENTDECK_SESSION_IDLE_S     close a session after this long without activity (3600)
  AGENTDECK_PAGELESS_IDLE_S    close a session no browser page holds (an API client) after this long idle (180)
  AGENTDECK_MAX_SANDBOXES      live sandboxes at once; idle ones are closed first to make room (16)
  AGENTDECK_SANDBOX            the sandbox backend code runs on (local; `agents.executor.backends.available()`
                               lists the ones this machine can use; the app refuses to start on one it cannot)
  AGENTDECK_SANDBOX_POOL       sandboxes kept started ahead of time per sandbox setting in use, each handed to one
                               session only (1; 0 = every session's sandbox starts cold)
  AGENTDECK_MAX_SESSIONS       live sessions (tabs and API clients) at once; the longest idle ones without a run or
                               a page are closed first to make room (2000)
  AGENTDECK_DECISION_TIMEOUT_S a run paused for a decision nobody makes is closed after this long (1800)
  AGENTDECK_TRUST_FORWARDED    1: take the visitor's address from X-Forwarded-For's right-most hop, if it is an IP
                               address (set behind your own proxy; on a real Space, SYSTEM=spaces, it is trusted
                               already; ui/web/rate_limit.py)
  AGENTDECK_HF_LOGIN           1: Gradio's mocked "Sign in with Hugging Face" (everyone becomes this machine's account),
                               for local development on a loopback-only server (ui/web/hf_login_env.py)
  AGENTDECK_MAX_TOKENS_PER_RUN model tokens one run may use before it stops (default: no cap)
  AGENTDECK_RUNS_AT_ONCE       runs one visitor may have going at the same time (2)
  AGENTDECK_RUNS_PER_MINUTE    runs one visitor (one address) may start per minute (10)
  AGENTDECK_SESSION_GRACE_S    delete a closed session's workspace after this long (300)
  AGENTDECK_MAX_RUNS           runs that may stream at the same time (32)
  AGENTDECK_EXEC_TIMEOUT_S     time limit of one code execution in the sandbox (120)
  AGENTDECK_MIN_FREE_MB        disk space kept free where the data folder lives (2048): below it no run starts and
                               running code stops writing (saved chats keep their files, so visitors could fill it)
  AGENTDECK_MAX_PUBLISHED_MB   what one chat's shown files (a copy per version, in Gradio's folder) may take (2048)
  AGENTDECK_APPROVAL_MODE      the approval mode a new tab starts with (autonomous; see ui/panels/approval_panel.py)
  AGENTDECK_USERNAME / AGENTDECK_PASSWORD   turn on password protection (wrong passwords slow down, then lock out:
                               ui/web/login_throttle.py)
  AGENTDECK_MODELS             comma-separated model strings visitors may pick (default: the configured model,
                               the embedded one and the hosted defaults; never replay:, transformers: or custom
                               endpoints unless listed here or set as AGENTDECK_MODEL)
  AGENTDECK_TOOLS              comma-separated tools visitors may enable (default: every built-in tool)
  AGENTDECK_ALLOW_ANY_MODEL    1 = a single-user install: any model string and any import may be chosen
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ui.model_choice import default_model, is_operator_only_model, model_choices, model_problem
from ui.tool_offer import available_tools
from ui.uploads.intake import max_upload_bytes_from_env

DEFAULT_AUTHORIZED_IMPORTS = ("pandas", "numpy", "matplotlib", "seaborn", "openpyxl", "scipy", "pypdf")
AGENT_TYPES = ("code", "tool-calling")
MAX_STEPS_LIMIT = 50  # the settings slider's top: a visitor's run never takes more steps


class SettingsRefusedError(ValueError):
    """A visitor chose a model, tool or import the server's operator did not allow; the message says which."""


class SignInNeededError(Exception):
    """A Hugging Face model was asked for with neither the visitor's token nor a server key (the page offers
    its sign-in: ui/web/sign_in.py)."""


def _list_env(name: str) -> tuple[str, ...] | None:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return None
    return tuple(dict.fromkeys(item.strip() for item in raw.split(",") if item.strip()))


def _int_env(name: str, default: int) -> int:
    try:
        return int(float(os.environ.get(name, "") or default))
    except ValueError:
        return default


def _approval_mode_env() -> str:
    from agents.decisions import APPROVAL_MODES

    mode = os.environ.get("AGENTDECK_APPROVAL_MODE", "").strip().lower()
    return mode if mode in APPROVAL_MODES else "autonomous"


def parse_imports(text: str | list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    if text is None:
        return ()
    items = text.replace("\n", ",").split(",") if isinstance(text, str) else list(text)
    seen: dict[str, None] = {}
    for item in items:
        name = str(item).strip()
        if name and all(part.isidentifier() or part == "*" for part in name.split(".")):
            seen.setdefault(name, None)
    return tuple(seen)


@dataclass
class AppConfig:
    model: str
    data_dir: Path
    authorized_imports: tuple[str, ...] = DEFAULT_AUTHORIZED_IMPORTS
    max_steps: int = 10
    max_upload_bytes: int = 50 * 1024 * 1024
    idle_timeout_s: float = 3600.0
    grace_s: float = 300.0
    pageless_idle_s: float = 180.0
    reattach_grace_s: float = 120.0  # a run whose page went away goes on this long for a reloaded page to re-attach
    runs_per_minute: int = 10
    runs_at_once: int = 2
    max_sandboxes: int = 16
    sandbox: str = "local"  # the sandbox backend (AGENTDECK_SANDBOX; agents/executor/backends.py)
    sandbox_pool: int = 0  # warm sandboxes per setting in use (AGENTDECK_SANDBOX_POOL, 1 from the environment; pool.py)
    max_sessions: int = 2000  # live sessions at once (memory): the longest idle are closed first
    decision_timeout_s: float = 1800.0  # a run paused for a person's decision holds its sandbox this long at most
    max_tokens_per_run: int | None = None  # the operator's spending cap per run (None: no cap)
    max_runs: int = 32
    exec_timeout_s: float = 120.0
    min_free_mb: int = 2048  # the data folder's disk floor: no run starts below it, running code stops writing
    visitor_disk_mb: int = 4096  # what one visitor's chats may take on disk before their runs are refused (0: no limit)
    upload_mb_per_hour: int = 1000  # what one visitor may store through Gradio's upload route an hour (0: no limit)
    max_message_chars: int = 100_000  # one chat message (0: no limit)
    max_request_mb: int = 2  # one request body, uploads aside (ui/web/body_limit.py)
    auth: tuple[str, str] | None = None
    approval_mode: str = "autonomous"  # the mode a new tab starts with (ui/panels/approval_panel.py)
    allowed_models: tuple[str, ...] | None = None  # None: the default offer (see visitor_models)
    allowed_tools: tuple[str, ...] | None = None  # None: every built-in tool
    free_choice: bool = False  # a single-user install: any model string, tool and import
    hf_login: bool = False  # "Sign in with Hugging Face": a real Space's OAuth, or the local mock (hf_login_env.py)
    structured_code: bool = False  # code steps as {"thought", "code"} JSON (AGENTDECK_STRUCTURED_CODE=1)
    #: Check the embedded model's answers before showing them, and mark them (agents/answer_checks/); off only for
    #: measuring what they change (bench/first_message_eval.py --checks both).
    answer_checks: bool = True
    chat_store: str = ""  # AGENTDECK_CHAT_STORE: "" for the data dir (ui/shared/blobs.py)
    redis_url: str = ""  # AGENTDECK_REDIS_URL: "" keeps leases and limits in memory (ui/shared/state.py)

    @property
    def max_request_bytes(self) -> int:
        """The request body cap: AGENTDECK_MAX_REQUEST_MB, and never less than a message of the longest allowed
        length needs (4 bytes a character, and room for the settings sent with it)."""
        return max(self.max_request_mb * 2**20, 4 * self.max_message_chars + 2**18)

    def needs_sign_in(self, settings: RunSettings) -> bool:
        """A Hugging Face model with neither the visitor's token nor a server key: the visitor must sign in."""
        return (settings.model.startswith("hf:") and not settings.hf_token
                and not os.environ.get("HF_TOKEN", "").strip())

    def visitor_models(self) -> list[str]:
        """The model strings a visitor may pick: the operator's list, else the configured model plus the
        embedded one and the hosted defaults (never an operator-only string the operator did not set)."""
        if self.allowed_models is not None:
            return list(dict.fromkeys([self.model, *self.allowed_models]))
        offered = model_choices(self.model, self.hf_login)
        return [m for m in offered if m == self.model or not is_operator_only_model(m)]

    def check_visitor_settings(self, settings: RunSettings) -> None:
        """Refuse what the operator did not allow (every path: the form, the API, a reopened chat)."""
        if self.free_choice:
            return
        if settings.model not in self.visitor_models():
            raise SettingsRefusedError(
                f"The model '{settings.model[:80]}' is not offered on this server. Pick one of: "
                f"{', '.join(self.visitor_models())}. (The server's operator sets the list with AGENTDECK_MODELS.)")
        allowed_tools = set(self.allowed_tools) if self.allowed_tools is not None else {n for n, _ in available_tools()}
        extra_tools = [t for t in settings.tools if t not in allowed_tools]
        if extra_tools:
            raise SettingsRefusedError(f"The tool(s) {', '.join(extra_tools)} are not offered on this server.")
        extra_imports = [i for i in settings.authorized_imports if i not in self.authorized_imports]
        if extra_imports:
            raise SettingsRefusedError(
                f"The import(s) {', '.join(extra_imports)} are not allowed on this server; the code agent may "
                f"import only {', '.join(self.authorized_imports) or 'the safe defaults'} (or fewer).")

    def check_models(self) -> None:
        """Refuse a bad configured model string (AGENTDECK_MODEL, AGENTDECK_MODELS) at start-up, with the reason."""
        from agents.errors import ConfigurationError

        configured = [("AGENTDECK_MODEL", self.model), *(("AGENTDECK_MODELS", m) for m in self.allowed_models or ())]
        for variable, model in configured:
            problem = model_problem(model)
            if problem:
                raise ConfigurationError(f"{variable} names the model '{model[:120]}', which cannot be used: {problem}")

    @classmethod
    def from_env(cls, base_dir: str | Path | None = None) -> AppConfig:
        base = Path(base_dir) if base_dir else Path(__file__).resolve().parent.parent
        from ui.saved.store import default_data_dir  # AGENTDECK_DATA_DIR, a Space's /data, else <base>/data
        from ui.web.hf_login_env import hf_login_from_env

        data_dir = default_data_dir(base)
        imports_env = os.environ.get("AGENTDECK_AUTHORIZED_IMPORTS")
        user, password = os.environ.get("AGENTDECK_USERNAME", ""), os.environ.get("AGENTDECK_PASSWORD", "")
        return cls(
            model=os.environ.get("AGENTDECK_MODEL", "").strip() or default_model(),
            data_dir=data_dir,
            authorized_imports=parse_imports(imports_env) if imports_env is not None else DEFAULT_AUTHORIZED_IMPORTS,
            max_steps=max(1, _int_env("AGENTDECK_MAX_STEPS", 10)),
            max_upload_bytes=max_upload_bytes_from_env(),
            idle_timeout_s=float(_int_env("AGENTDECK_SESSION_IDLE_S", 3600)),
            grace_s=float(_int_env("AGENTDECK_SESSION_GRACE_S", 300)),
            pageless_idle_s=float(_int_env("AGENTDECK_PAGELESS_IDLE_S", 180)),
            reattach_grace_s=float(_int_env("AGENTDECK_REATTACH_GRACE_S", 120)),
            runs_per_minute=max(1, _int_env("AGENTDECK_RUNS_PER_MINUTE", 10)),
            runs_at_once=max(1, _int_env("AGENTDECK_RUNS_AT_ONCE", 2)),
            max_sandboxes=max(1, _int_env("AGENTDECK_MAX_SANDBOXES", 16)),
            sandbox=os.environ.get("AGENTDECK_SANDBOX", "").strip() or "local",
            sandbox_pool=max(0, min(16, _int_env("AGENTDECK_SANDBOX_POOL", 1))),
            max_sessions=max(10, _int_env("AGENTDECK_MAX_SESSIONS", 2000)),
            decision_timeout_s=float(max(60, _int_env("AGENTDECK_DECISION_TIMEOUT_S", 1800))),
            max_tokens_per_run=_int_env("AGENTDECK_MAX_TOKENS_PER_RUN", 0) or None,
            max_runs=max(1, _int_env("AGENTDECK_MAX_RUNS", 32)),
            exec_timeout_s=float(_int_env("AGENTDECK_EXEC_TIMEOUT_S", 120)),
            min_free_mb=max(0, _int_env("AGENTDECK_MIN_FREE_MB", 2048)),
            structured_code=_int_env("AGENTDECK_STRUCTURED_CODE", 0) > 0,
            visitor_disk_mb=max(0, _int_env("AGENTDECK_VISITOR_DISK_MB", 4096)),
            # 20 uploads of the largest size by default: a message holds up to 10 files, a chat up to 4 of them
            upload_mb_per_hour=max(0, _int_env("AGENTDECK_UPLOAD_MB_PER_HOUR",
                                               20 * max(1, max_upload_bytes_from_env() // 2**20))),
            max_message_chars=max(0, _int_env("AGENTDECK_MAX_MESSAGE_CHARS", 100_000)),
            max_request_mb=max(1, _int_env("AGENTDECK_MAX_REQUEST_MB", 2)),
            auth=(user, password) if user and password else None,
            approval_mode=_approval_mode_env(),
            allowed_models=_list_env("AGENTDECK_MODELS"),
            allowed_tools=_list_env("AGENTDECK_TOOLS"),
            free_choice=os.environ.get("AGENTDECK_ALLOW_ANY_MODEL", "").strip().lower() in ("1", "true", "yes"),
            hf_login=hf_login_from_env(),  # a real Space's OAuth, or the loopback-only local mock (hf_login_env.py)
            chat_store=os.environ.get("AGENTDECK_CHAT_STORE", "").strip(),
            redis_url=os.environ.get("AGENTDECK_REDIS_URL", "").strip(),
        )


@dataclass(frozen=True)
class RunSettings:
    """What the settings panel chose for a session's agent. A change rebuilds the agent."""
    model: str
    agent_type: str = "code"
    max_steps: int = 10
    planning_interval: int | None = None
    tools: tuple[str, ...] = ()
    authorized_imports: tuple[str, ...] = DEFAULT_AUTHORIZED_IMPORTS
    # The signed-in visitor's own Hugging Face token: used for their hf: models, never saved or shown.
    hf_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_form(cls, config: AppConfig, *, model: Any, agent_type: Any, max_steps: Any, planning_interval: Any,
                  tools: Any, imports: Any) -> RunSettings:
        """The settings form's values (ui/settings_form.py, by name: `**values.by_name()`), as a page or an API
        client sent them (any type, any value), checked against what the operator allows. A setting added to the
        form is a parameter here: until it is, every run fails with a TypeError (never a value in the wrong
        place)."""
        def as_int(value: Any, default: int) -> int:
            try:
                return int(value)
            except (TypeError, ValueError, OverflowError):  # None, "many", NaN, infinity
                return default

        for name, value in (("tools", tools), ("imports", imports)):
            if not isinstance(value, (str, list, tuple, type(None))):
                raise SettingsRefusedError(f"The {name} setting must be a list of names or a comma-separated text, "
                                           f"not {type(value).__name__}.")
        interval = as_int(planning_interval, 0)
        if isinstance(tools, str):
            tools = [tools]
        settings = cls(
            model=str(model or config.model).strip() or config.model,
            agent_type=agent_type if agent_type in AGENT_TYPES else "code",
            max_steps=min(MAX_STEPS_LIMIT, max(1, as_int(max_steps, config.max_steps))),
            planning_interval=interval if interval > 0 else None,
            tools=tuple(str(t) for t in (tools or ()) if isinstance(t, str)),
            authorized_imports=parse_imports(imports) if imports is not None else config.authorized_imports,
        )
        config.check_visitor_settings(settings)
        problem = model_problem(settings.model)
        if problem:  # before any run: the picker's note says the same
            raise SettingsRefusedError(f"The model '{settings.model[:80]}' cannot be used: {problem}")
        return settings
