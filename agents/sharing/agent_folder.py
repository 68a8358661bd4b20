"""An agent saved as a folder (made again from it by agent_loading.py): its kind, model string, settings, prompt
templates, tools (`tools/<name>/`, see tool_folder.py) and managed agents (`managed_agents/<name>/`, nested).

Why: teams share agents as folders and Hub repos. What is saved is what can be written down honestly: the model
as the string `load_model` takes (never its key, token or endpoint object), settings that are plain values, the
full prompt templates. Callables (step callbacks, final-answer checks, a decider) are not saved; pass them again
as keyword arguments, which replace what was saved.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from agents.errors import SharingError
from agents.sharing.tool_folder import FORMAT_VERSION, code_to_run, load_manifest, save_tool

if TYPE_CHECKING:
    from agents.models.base import Model

AGENT_MANIFEST = "agent.json"
PROMPTS_FILE = "prompts.yaml"
AGENT_FORMAT = "agentdeck-agent"
#: Settings every agent has, saved by attribute name (each is a constructor argument of the same name).
COMMON_SETTINGS = ("max_steps", "planning_interval", "name", "description", "instructions", "verbosity",
                   "max_tokens_per_run")
#: Settings some agent kinds have (CodeAgent, ToolCallingAgent), saved when the agent has them.
KIND_SETTINGS = ("authorized_imports", "executor_timeout_s", "max_parallel_calls")
#: Adapters whose models are named again by a prefix and their model id (agents/models/loader.py).
_MODEL_PREFIXES = {"InferenceClientModel": "hf:", "TransformersModel": "transformers:", "LiteLLMModel": "litellm:"}


#: The agent kinds a folder may hold, by class name (agent_loading.py makes them).
AGENT_KINDS = ("CodeAgent", "ToolCallingAgent")


def model_string(model: Model | None) -> str | None:
    """The string `load_model` makes `model` from again, or None when it has none (a scripted replay)."""
    inner = getattr(model, "model", None)
    if type(model).__name__ == "RecordingModel" and inner is not None:
        model = inner
    kind = type(model).__name__
    model_id = getattr(model, "model_id", None)
    if not isinstance(model_id, str) or not model_id:
        return None
    if kind == "EmbeddedModel":
        return model_id  # already "embedded:<name>"
    prefix = _MODEL_PREFIXES.get(kind)
    return prefix + model_id if prefix else None


def save_agent(agent: Any, folder: str | os.PathLike[str]) -> Path:
    """Write `agent` to `folder` (created if needed); returns the folder."""
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    kind = type(agent).__name__
    if not any(cls.__name__ in AGENT_KINDS for cls in type(agent).__mro__):
        raise SharingError(f"Only {' and '.join(AGENT_KINDS)} (and their subclasses) can be saved, not {kind}.")
    kind = next(cls.__name__ for cls in type(agent).__mro__ if cls.__name__ in AGENT_KINDS)
    for name, tool in agent.tools.items():
        save_tool(tool, target / "tools" / name)
    for name, managed in agent.managed_agents.items():
        save_agent(managed, target / "managed_agents" / name)
    manifest = {
        "format": AGENT_FORMAT, "version": FORMAT_VERSION, "class": kind,
        "model": {"string": model_string(agent.model), "class": type(agent.model).__name__},
        "settings": agent_settings(agent),
        "tools": list(agent.tools), "managed_agents": list(agent.managed_agents),
    }
    (target / AGENT_MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    (target / PROMPTS_FILE).write_text(yaml.safe_dump(agent.prompt_templates, sort_keys=False, allow_unicode=True,
                                                      width=120), encoding="utf-8")
    (target / "README.md").write_text(_card(agent, kind), encoding="utf-8")
    return target


def agent_settings(agent: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {name: getattr(agent, name) for name in COMMON_SETTINGS}
    settings.update({name: getattr(agent, name) for name in KIND_SETTINGS if hasattr(agent, name)})
    if isinstance(settings.get("authorized_imports"), (list, tuple)):
        settings["authorized_imports"] = list(settings["authorized_imports"])
    budget = getattr(getattr(agent, "compactor", None), "context_budget", None)
    if budget is not None:
        settings["context_budget"] = budget
    backend = getattr(agent, "sandbox_backend", None)
    if isinstance(backend, str):  # a backend given as an object is the operator's, not the folder's
        settings["sandbox"] = backend
    return settings


def _card(agent: Any, kind: str) -> str:
    lines = ["---", "library_name: agentdeck", "tags: [agentdeck, agent]", "---", "",
             f"# {agent.name or 'agent'}", "", f"An AgentDeck {kind}. {agent.description or ''}".rstrip(), "",
             "```python", "from agents import CodeAgent",
             "agent = CodeAgent.from_hub(\"<repo id>\", trust_remote_code=True)  # read its tools first", "```", ""]
    if agent.tools:
        lines += ["Tools: " + ", ".join(f"`{name}`" for name in agent.tools), ""]
    return "\n".join(lines)


def read_agent_manifest(folder: Path) -> dict[str, Any]:
    manifest, path = load_manifest(folder, AGENT_MANIFEST, AGENT_FORMAT, "agent")
    if manifest.get("class") not in AGENT_KINDS:
        raise SharingError(f"{path}: unknown agent class {manifest.get('class')!r}.")
    for key in ("tools", "managed_agents"):
        names = manifest.get(key, [])
        if not isinstance(names, list) or not all(isinstance(n, str) and n.isidentifier() for n in names):
            raise SharingError(f"{path}: `{key}` must be a list of Python identifiers.")
    if not isinstance(manifest.get("settings", {}), dict):
        raise SharingError(f"{path}: `settings` must be a mapping.")
    return manifest


def agent_code_to_run(folder: Path) -> list[str]:
    """What loading the agent in `folder` would run: its tools' code and its prompt templates (Jinja2, rendered
    in the app), its managed agents' too."""
    manifest = read_agent_manifest(folder)
    found = [f"{folder / PROMPTS_FILE} (prompt templates)"]
    for name in manifest.get("tools", []):
        found += code_to_run(folder / "tools" / name)
    for name in manifest.get("managed_agents", []):
        found += agent_code_to_run(folder / "managed_agents" / name)
    return found
