"""An agent made again from its saved folder (agent_folder.py writes it): its tools, managed agents, prompt
templates, model and settings, any of them replaced by keyword arguments.

The agent classes are found by name through the `agents` package's exports, as a caller would name them:
the loop's modules call in here (`CodeAgent.from_folder`), so importing them here would make a circle.
"""
from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

import agents
from agents.errors import ConfigurationError, SharingError
from agents.sharing.agent_folder import AGENT_KINDS, AGENT_MANIFEST, PROMPTS_FILE, read_agent_manifest
from agents.sharing.tool_loading import load_tool_folder

if TYPE_CHECKING:
    from agents.models.base import Model


def agent_classes() -> dict[str, type[Any]]:
    return {name: getattr(agents, name) for name in AGENT_KINDS}


def load_agent(cls: type[Any], folder: str | os.PathLike[str], *, tools_require_approval: bool | None = None,
               **overrides: Any) -> Any:
    """The agent saved in `folder`; keyword arguments replace what was saved (`model=` replaces the model for its
    managed agents too). `tools_require_approval` overrides what each loaded tool declares (None keeps it)."""
    path = Path(folder)
    manifest = read_agent_manifest(path)
    saved_class = agent_classes()[manifest["class"]]
    agent_class = _class_to_make(cls, saved_class, path)
    arguments: dict[str, Any] = dict(manifest.get("settings", {}))
    _check_settings(agent_class, arguments, path)
    if "tools" not in overrides:
        arguments["tools"] = [load_tool_folder(path / "tools" / name, tools_require_approval)
                              for name in manifest.get("tools", [])]
    if "managed_agents" not in overrides:
        passed = {"model": overrides["model"]} if "model" in overrides else {}
        arguments["managed_agents"] = [
            load_agent(_any_agent(), path / "managed_agents" / name, tools_require_approval=tools_require_approval,
                       **passed) for name in manifest.get("managed_agents", [])]
    if "prompt_templates" not in overrides:
        arguments["prompt_templates"] = _read_prompts(path)
    if "model" not in overrides:
        arguments["model"] = _saved_model(manifest, path)
    arguments.update(overrides)
    return agent_class(**arguments)


def _any_agent() -> type[Any]:
    base: type[Any] = agents.MultiStepAgent
    return base


def _class_to_make(cls: type[Any], saved: type[Any], folder: Path) -> type[Any]:
    """The saved kind, or `cls` when it is that kind's subclass; `MultiStepAgent.from_folder` takes either kind."""
    if issubclass(cls, saved):
        return cls
    if not any(issubclass(cls, kind) for kind in agent_classes().values()):
        return saved
    raise SharingError(f"{folder} holds a {saved.__name__}, not a {cls.__name__}: load it with "
                       f"{saved.__name__}.from_folder (or MultiStepAgent.from_folder).")


def _check_settings(agent_class: type[Any], settings: dict[str, Any], folder: Path) -> None:
    accepted = set(inspect.signature(agent_class.__init__).parameters) | set(
        inspect.signature(agents.MultiStepAgent.__init__).parameters)
    unknown = sorted(set(settings) - accepted - {"tools", "managed_agents", "model", "prompt_templates"})
    if unknown or set(settings) & {"tools", "managed_agents", "model", "prompt_templates"}:
        raise SharingError(f"{folder / AGENT_MANIFEST}: settings {unknown or sorted(settings)} are not "
                           f"{agent_class.__name__} settings here (saved by another version of AgentDeck?).")


def _read_prompts(folder: Path) -> dict[str, Any]:
    path = folder / PROMPTS_FILE
    try:
        templates = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise SharingError(f"{folder} holds no {PROMPTS_FILE}: the saved agent is incomplete.") from exc
    except yaml.YAMLError as exc:
        raise SharingError(f"{path} is not valid YAML: {exc}") from exc
    if not isinstance(templates, dict):
        raise SharingError(f"{path} must hold a mapping of template names to templates.")
    return templates


def _saved_model(manifest: dict[str, Any], folder: Path) -> Model:
    from agents.models.loader import load_model

    saved = manifest.get("model") or {}
    spec = saved.get("string") if isinstance(saved, dict) else None
    if not isinstance(spec, str) or not spec:
        raise SharingError(f"The agent in {folder} was saved with a model that has no model string "
                           f"({saved.get('class') if isinstance(saved, dict) else saved}); pass model=... to load it.")
    try:
        return load_model(spec)
    except ConfigurationError as exc:
        raise SharingError(f"The agent in {folder} names the model {spec!r}, which cannot be loaded here ({exc}); "
                           "pass model=... to load it with another.") from exc
