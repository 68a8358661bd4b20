"""App configuration (environment) and per-session run settings (the settings panel), checked against what the
operator allows: a visitor sends them (form or API), so they are hostile input. What models and tools are offered:
ui/model_choice.py and ui/tool_offer.py; the agent built from the settings: ui/agent_factory.py.

The operator's settings are the typed object of ui/config/ (every AGENTDECK_* variable, its type, range, default
and description, checked at start-up); `AppConfig.from_env` turns them into what the app uses.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ui.config import DEFAULT_AUTHORIZED_IMPORTS, MAX_STEPS_LIMIT, AppSettings, load_settings
from ui.config.uploads import UPLOADS_PER_HOUR
from ui.model_choice import default_model, is_operator_only_model, model_choices, model_problem
from ui.tool_offer import available_tools

AGENT_TYPES = ("code", "tool-calling")
__all__ = ["AGENT_TYPES", "DEFAULT_AUTHORIZED_IMPORTS", "MAX_STEPS_LIMIT", "AppConfig", "RunSettings",
           "SettingsRefusedError", "SignInNeededError", "parse_imports"]


class SettingsRefusedError(ValueError):
    """A visitor chose a model, tool or import the server's operator did not allow; the message says which."""


class SignInNeededError(Exception):
    """A Hugging Face model was asked for with neither the visitor's token nor a server key (the page offers
    its sign-in: ui/web/sign_in.py)."""


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


@dataclass(frozen=True)
class RetryChoice:
    """The operator's retry policy of model calls, passed to `agents.models.RetryPolicy`."""
    max_retries: int = 4
    initial_delay: float = 1.0
    max_retry_after: float = 60.0


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
    #: With those checks, confirm a plain answer that passed them by a second, independent attempt of the model
    #: (agents/loop/second_attempt.py: one model call more, two at most; only the embedded model's answers are
    #: checked, so only it pays for it). AGENTDECK_ANSWER_AGREEMENT=0 turns it off.
    answer_agreement: bool = True
    chat_store: str = ""  # AGENTDECK_CHAT_STORE: "" for the data dir (ui/shared/blobs.py)
    redis_url: str = ""  # AGENTDECK_REDIS_URL: "" keeps leases and limits in memory (ui/shared/state.py)
    configured_model: str = ""  # AGENTDECK_MODEL as the operator set it ("" when chosen from the keys)
    record_to: str | None = None  # AGENTDECK_RECORD: every model exchange saved to this transcript
    context_budget: int | None = None  # AGENTDECK_CONTEXT_BUDGET (None: from the model's context size)
    retry: RetryChoice = field(default_factory=lambda: RetryChoice())  # AGENTDECK_MODEL_* retries
    #: The object this configuration was made from (None for one built by hand, as tests do): what the app sets
    #: for the whole process (the agents library's host settings) comes from it at start (ui/server.py).
    settings: AppSettings | None = field(default=None, repr=False, compare=False)

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
        """The configuration from the environment, through the settings object: a bad variable raises
        `ui.config.SettingsError` naming it, what it got and what it accepts."""
        return cls.from_settings(load_settings(), base_dir)

    @classmethod
    def from_settings(cls, settings: AppSettings, base_dir: str | Path | None = None) -> AppConfig:
        base = Path(base_dir) if base_dir else Path(__file__).resolve().parent.parent
        from ui.saved.data_folder import default_data_dir  # AGENTDECK_DATA_DIR, a Space's /data, else <base>/data
        from ui.web.hf_login_env import hf_login_from_env

        upload_mb = settings.max_upload_mb
        password = settings.password.get_secret_value() if settings.password is not None else ""
        return cls(
            model=settings.model.strip() or _operator_server_model(settings) or default_model(),
            configured_model=settings.model.strip(),
            data_dir=default_data_dir(base, settings.data_dir),
            authorized_imports=parse_imports(settings.authorized_imports),
            max_steps=settings.max_steps,
            max_upload_bytes=int(upload_mb * 2**20),
            idle_timeout_s=float(settings.session_idle_s),
            grace_s=float(settings.session_grace_s),
            pageless_idle_s=float(settings.pageless_idle_s),
            reattach_grace_s=float(settings.reattach_grace_s),
            runs_per_minute=settings.runs_per_minute,
            runs_at_once=settings.runs_at_once,
            max_sandboxes=settings.max_sandboxes,
            sandbox=settings.sandbox,
            sandbox_pool=settings.sandbox_pool,
            max_sessions=settings.max_sessions,
            decision_timeout_s=float(settings.decision_timeout_s),
            max_tokens_per_run=settings.max_tokens_per_run or None,
            max_runs=settings.max_runs,
            exec_timeout_s=settings.exec_timeout_s,
            min_free_mb=settings.min_free_mb,
            structured_code=settings.structured_code,
            answer_agreement=settings.answer_agreement,
            visitor_disk_mb=settings.visitor_disk_mb,
            # 20 uploads of the largest size by default: a message holds up to 10 files, a chat up to 4 of them
            upload_mb_per_hour=(settings.upload_mb_per_hour if settings.upload_mb_per_hour is not None
                                else UPLOADS_PER_HOUR * max(1, int(upload_mb))),
            max_message_chars=settings.max_message_chars,
            max_request_mb=settings.max_request_mb,
            auth=(settings.username, password) if settings.username and password else None,
            approval_mode=settings.approval_mode,
            allowed_models=settings.models or None,
            allowed_tools=settings.tools,
            free_choice=settings.allow_any_model,
            hf_login=hf_login_from_env(),  # a real Space's OAuth, or the loopback-only local mock (hf_login_env.py)
            chat_store=settings.chat_store.strip(),
            redis_url=settings.redis_url.strip(),
            record_to=settings.record or None,
            context_budget=settings.context_budget,
            retry=RetryChoice(settings.model_max_retries, settings.model_retry_delay, settings.model_max_retry_after),
            settings=settings,
        )


@dataclass(frozen=True)
class AgentBuild:
    """The part of RunSettings an agent is built with (ui/agent_factory.py): a change needs a new agent (model,
    agent type, the visitor's token for their hf: model) or a new sandbox (the code's imports). The rest of the
    settings apply to each run (`agent.run(..., max_steps=...)`) and change nothing built."""
    model: str
    agent_type: str
    token: str | None = field(default=None, repr=False)
    imports: tuple[str, ...] = ()

    def agent_part(self) -> tuple[str, str, str | None]:
        """What only a new agent can change."""
        return self.model, self.agent_type, self.token


@dataclass(frozen=True)
class RunSettings:
    """What the settings panel chose for a session's agent. Its `agent_build` part changing builds a new agent
    (or, for the imports, a new sandbox); the rest applies per run."""
    model: str
    agent_type: str = "code"
    max_steps: int = 10
    planning_interval: int | None = None
    tools: tuple[str, ...] = ()
    authorized_imports: tuple[str, ...] = DEFAULT_AUTHORIZED_IMPORTS
    # The signed-in visitor's own Hugging Face token: used for their hf: models, never saved or shown.
    hf_token: str | None = field(default=None, repr=False)

    def agent_build(self) -> AgentBuild:
        """What an agent is built with (see AgentBuild): the token counts only for a Hugging Face model, and the
        imports only for the code agent."""
        return AgentBuild(model=self.model, agent_type=self.agent_type,
                          token=self.hf_token if self.model.startswith("hf:") else None,
                          imports=self.authorized_imports if self.agent_type == "code" else ())

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


def _operator_server_model(settings: AppSettings) -> str:
    """The first model of the operator's OpenAI-compatible server (AGENTDECK_OPENAI_MODELS), the default model when
    AGENTDECK_MODEL is unset and that server has an address; else ''."""
    if settings.openai_base_url.strip() and settings.openai_models:
        from agents.models.compatible import PREFIX

        return f"{PREFIX}:{settings.openai_models[0]}"
    return ""
