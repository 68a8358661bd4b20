"""App configuration (environment) and per-session run settings (the settings panel), and the agent factory.

Environment variables:
  AGENTDECK_MODEL              default model string (e.g. "embedded", "openai/gpt-4.1-mini", "replay:path.yaml")
  AGENTDECK_DATA_DIR           saved chats and workspaces (default ./data beside app.py; on a Space with
                               persistent storage /data/agentdeck)
  AGENTDECK_SECRET             signs saved chats (default: a random secret kept in <data dir>/secret)
  AGENTDECK_AUTHORIZED_IMPORTS comma-separated extra imports for the code agent (default: data-analysis set)
  AGENTDECK_MAX_STEPS          default max steps (10)
  AGENTDECK_MAX_UPLOAD_MB      upload size limit per file (50)
  AGENTDECK_SESSION_IDLE_S     close a session after this long without activity (3600)
  AGENTDECK_PAGELESS_IDLE_S    close a session no browser page holds (an API client) after this long idle (180)
  AGENTDECK_MAX_SANDBOXES      live sandboxes at once; idle ones are closed first to make room (16)
  AGENTDECK_DECISION_TIMEOUT_S a run paused for a decision nobody makes is closed after this long (1800)
  AGENTDECK_TRUST_FORWARDED    1: take the visitor's address from X-Forwarded-For (set behind your own proxy;
                               on a Space it is trusted already)
  AGENTDECK_MAX_TOKENS_PER_RUN model tokens one run may use before it stops (default: no cap)
  AGENTDECK_RUNS_AT_ONCE       runs one visitor may have going at the same time (2)
  AGENTDECK_RUNS_PER_MINUTE    runs one visitor (one address) may start per minute (10)
  AGENTDECK_SESSION_GRACE_S    delete a closed session's workspace after this long (300)
  AGENTDECK_MAX_RUNS           runs that may stream at the same time (32)
  AGENTDECK_EXEC_TIMEOUT_S     time limit of one code execution in the sandbox (120)
  AGENTDECK_APPROVAL_MODE      the approval mode a new tab starts with (autonomous; see ui/panels/approval_panel.py)
  AGENTDECK_USERNAME / AGENTDECK_PASSWORD   turn on password protection
  AGENTDECK_MODELS             comma-separated model strings visitors may pick (default: the configured model,
                               the embedded one and the hosted defaults; never replay:, transformers: or custom
                               endpoints unless listed here or set as AGENTDECK_MODEL)
  AGENTDECK_TOOLS              comma-separated tools visitors may enable (default: every built-in tool)
  AGENTDECK_ALLOW_ANY_MODEL    1 = a single-user install: any model string and any import may be chosen
"""
from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ui.session.heap import freeze_long_lived_objects
from ui.uploads.intake import max_upload_bytes_from_env

DEFAULT_AUTHORIZED_IMPORTS = ("pandas", "numpy", "matplotlib", "seaborn", "openpyxl", "scipy", "pypdf")
FALLBACK_MODEL = "embedded:smollm2"
KNOWN_MODEL_STRINGS = ("embedded:smollm2", "openai/gpt-4.1-mini", "openai/gpt-4.1", "anthropic/claude-sonnet-4-5",
                       "hf:Qwen/Qwen2.5-Coder-32B-Instruct", "ollama/qwen2.5-coder:7b")
DEFAULT_TOOLS = ("web_search", "visit_webpage", "wikipedia_search")
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


def is_operator_only_model(model: str) -> bool:
    """Model strings that reach the server's files, downloads or arbitrary hosts: only the operator sets them."""
    text = model.strip().lower()
    return (text.startswith(("replay:", "transformers:", "/", ".", "~")) or "://" in text or "@" in text
            or "api_base" in text or "\\" in text or ".." in text)


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
    decision_timeout_s: float = 1800.0  # a run paused for a person's decision holds its sandbox this long at most
    max_tokens_per_run: int | None = None  # the operator's spending cap per run (None: no cap)
    max_runs: int = 32
    exec_timeout_s: float = 120.0
    auth: tuple[str, str] | None = None
    approval_mode: str = "autonomous"  # the mode a new tab starts with (ui/panels/approval_panel.py)
    allowed_models: tuple[str, ...] | None = None  # None: the default offer (see visitor_models)
    allowed_tools: tuple[str, ...] | None = None  # None: every built-in tool
    free_choice: bool = False  # a single-user install: any model string, tool and import
    hf_login: bool = False  # the "Sign in with Hugging Face" button (on a Space, or AGENTDECK_HF_LOGIN=1 with a token)

    def needs_sign_in(self, settings: RunSettings) -> bool:
        """A Hugging Face model with neither the visitor's token nor a server key: the visitor must sign in."""
        return (settings.model.startswith("hf:") and not settings.hf_token
                and not os.environ.get("HF_TOKEN", "").strip())

    def visitor_models(self) -> list[str]:
        """The model strings a visitor may pick: the operator's list, else the configured model plus the
        embedded one and the hosted defaults (never an operator-only string the operator did not set)."""
        if self.allowed_models is not None:
            return list(dict.fromkeys([self.model, *self.allowed_models]))
        return [m for m in model_choices(self) if m == self.model or not is_operator_only_model(m)]

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
            decision_timeout_s=float(max(60, _int_env("AGENTDECK_DECISION_TIMEOUT_S", 1800))),
            max_tokens_per_run=_int_env("AGENTDECK_MAX_TOKENS_PER_RUN", 0) or None,
            max_runs=max(1, _int_env("AGENTDECK_MAX_RUNS", 32)),
            exec_timeout_s=float(_int_env("AGENTDECK_EXEC_TIMEOUT_S", 120)),
            auth=(user, password) if user and password else None,
            approval_mode=_approval_mode_env(),
            allowed_models=_list_env("AGENTDECK_MODELS"),
            allowed_tools=_list_env("AGENTDECK_TOOLS"),
            free_choice=os.environ.get("AGENTDECK_ALLOW_ANY_MODEL", "").strip().lower() in ("1", "true", "yes"),
            hf_login=hf_login_from_env(),  # on a Space with OAuth, or locally with a token (ui/web/sign_in.py)
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
    def from_form(cls, config: AppConfig, model: Any, agent_type: Any, max_steps: Any, planning_interval: Any,
                  tools: Any, imports: Any) -> RunSettings:
        def as_int(value: Any, default: int) -> int:
            try:
                return int(value)
            except (TypeError, ValueError):
                return default

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


# ----- models ----------------------------------------------------------------------------------------
def default_model() -> str:
    try:
        from agents.models.selection import default_model_string
        return str(default_model_string())
    except Exception:  # the selection module is optional: fall back to the embedded model
        return FALLBACK_MODEL


def model_problem(model: str) -> str | None:
    """Why a model string cannot be used here (unknown form, provider or embedded model, its wheel missing,
    a missing transcript), or None. Checked without loading the model or calling anyone."""
    from agents.errors import ConfigurationError
    from agents.models.loader import check_model_string

    try:
        check_model_string(model)
    except ConfigurationError as exc:
        return str(exc)
    return None


def model_note(model: str) -> str:
    """A short note about a model choice: what the embedded model can do, a refused string's reason."""
    problem = model_problem(model)
    if problem:
        return f"⛔ **This model cannot be used**: {problem}"
    if model.startswith("hf:") and not os.environ.get("HF_TOKEN", "").strip():
        return ("ℹ️ A Hugging Face model: sign in with Hugging Face to use it with your own account's inference "
                "credits (the server has no key of its own).")
    try:
        from agents.models.selection import describe_model_choice
        note = describe_model_choice(model)
        if note:
            return str(note)
    except Exception:
        pass
    if model.split(":", 1)[0] == "embedded":
        return "ℹ️ This is the small embedded model that runs on this machine: fine for trying things, " \
               "weak at real analysis. Set an API key and pick a hosted model for better results."
    if model.startswith("replay:"):
        return "ℹ️ Replay model: plays back a scripted transcript (offline demos and tests)."
    return ""


def model_choices(config: AppConfig) -> list[str]:
    """The configured model first, then the embedded one and the defaults this server can reach: a hosted
    model only when its key is set (an `hf:` one also when visitors sign in with their own), a local server
    such as Ollama only when its address is configured. Offering the rest would only produce errors."""
    choices = [config.model]
    try:
        from agents.models import selection

        if selection.embedded_available():  # a lean Space has no local models: never offer what cannot run
            choices.append(selection.EMBEDDED)
        choices += [model for _, model in getattr(selection, "KEYED_DEFAULTS", ())]
    except Exception:
        pass
    choices += [m for m in KNOWN_MODEL_STRINGS if not m.startswith("embedded") or m in choices]
    return [m for m in dict.fromkeys(choices) if m == config.model or reachable_model(m, config.hf_login)]


LOCAL_SERVER_ENV = {"ollama": "OLLAMA_API_BASE"}


def reachable_model(model_string: str, hf_login: bool = False, env: Mapping[str, str] | None = None) -> bool:
    """Whether this server holds what `model_string` needs: its key, a sign-in, or a local server's address."""
    env = os.environ if env is None else env
    if model_string.startswith("embedded"):
        return True
    if model_string.startswith("hf:") and hf_login:
        return True
    provider = model_string.split("/", 1)[0].lower() if "/" in model_string else ""
    if provider in LOCAL_SERVER_ENV:
        return bool((env.get(LOCAL_SERVER_ENV[provider]) or "").strip())
    from agents.models.selection import key_variable

    variable = key_variable(model_string)
    return variable is None or bool((env.get(variable) or "").strip())


# ----- tools -----------------------------------------------------------------------------------------
_TOOL_CACHE: list[Any] | None = None
_TOOL_LOCK = threading.Lock()


def _builtin_tools() -> list[Any]:
    """The registry's tools, built once per process (MCP servers are started once, not per session)."""
    global _TOOL_CACHE
    with _TOOL_LOCK:
        if _TOOL_CACHE is None:
            try:
                from tools.registry import builtin_tools

                found = builtin_tools()
                _TOOL_CACHE = list(found.values()) if isinstance(found, dict) else list(found)
            except Exception as exc:  # the app still works without extra tools
                logging.getLogger(__name__).warning("Could not load the tool registry: %s", exc)
                _TOOL_CACHE = []
        return list(_TOOL_CACHE)


def default_tool_names() -> list[str]:
    names = [name for name, _ in available_tools()]
    return [name for name in DEFAULT_TOOLS if name in names]


def available_tools() -> list[tuple[str, str]]:
    """(name, description) of the tools a person may enable, final_answer excluded (always there)."""
    found = []
    for tool in _builtin_tools():
        name = getattr(tool, "name", "")
        if name and name != "final_answer":
            found.append((name, " ".join(str(getattr(tool, "description", "")).split())))
    return found


def select_tools(names: tuple[str, ...]) -> list[Any]:
    wanted = set(names)
    return [tool for tool in _builtin_tools() if getattr(tool, "name", "") in wanted]


# ----- agents ----------------------------------------------------------------------------------------
_shared_models: dict[str, Any] = {}
_shared_models_lock = threading.Lock()


def load_model(model_string: str) -> Any:
    """The model for `model_string`. Replay models keep a cursor, so each session gets its own; every other
    adapter is stateless between calls and thread-safe, so sessions share one instance (the embedded model's
    weights are loaded once per process, not once per browser tab)."""
    from agents.models import load_model as load

    if model_string.startswith("replay:"):
        return load(model_string)
    with _shared_models_lock:
        model = _shared_models.get(model_string)
        if model is None:
            model = _shared_models[model_string] = load(model_string)
            # Its weights and libraries live as long as the process: keep them out of every full collection.
            freeze_long_lived_objects()
        return model


def build_agent(settings: RunSettings, workdir: str | Path, config: AppConfig) -> Any:
    """A fresh agent (with its own model instance and sandbox) for one session."""
    from agents import CodeAgent, ToolCallingAgent

    if settings.hf_token and settings.model.startswith("hf:"):
        from agents.models import load_model as load

        model = load(settings.model, token=settings.hf_token)  # the visitor's own: never shared between sessions
    else:
        model = load_model(settings.model)
    tools = [t.for_workspace(workdir) if hasattr(t, "for_workspace") else t for t in select_tools(settings.tools)]
    if not any(getattr(t, "name", "") == "ask_user" for t in tools):  # always there: the model may ask the person
        from agents.tooling.ask_user import AskUserTool
        tools.append(AskUserTool())
    common: dict[str, Any] = dict(tools=tools, model=model, max_steps=settings.max_steps,
                                  planning_interval=settings.planning_interval, verbosity=0,
                                  max_tokens_per_run=config.max_tokens_per_run)
    if settings.agent_type == "tool-calling":
        return _construct(ToolCallingAgent, common, workdir=str(workdir))
    return _construct(CodeAgent, common, workdir=str(workdir), authorized_imports=list(settings.authorized_imports),
                      executor_timeout_s=config.exec_timeout_s)


def _construct(cls: Any, common: dict[str, Any], **extra: Any) -> Any:
    """Pass the optional keyword arguments the agent class accepts, and drop the ones it does not."""
    import inspect

    kwargs = {**common, **extra}
    try:
        parameters = inspect.signature(cls.__init__).parameters
        if not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
            kwargs = {k: v for k, v in kwargs.items() if k in parameters}
    except (TypeError, ValueError):
        pass
    while True:
        try:
            return cls(**kwargs)
        except TypeError as exc:
            optional = [k for k in ("verbosity", "executor_timeout_s", "workdir") if k in kwargs and k in str(exc)]
            if not optional:
                raise
            kwargs.pop(optional[0])
