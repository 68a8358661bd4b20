"""Prompt templates: YAML files of Jinja2 templates rendered with strict undefined variables.

`common.yaml` holds the messages every agent kind shares; each kind's file (e.g. `code_agent.yaml`)
adds or overrides keys. Users override any key with `prompt_templates={...}` (nested dicts merge).
"""
from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
import yaml

from agents.errors import PromptTemplateError

PROMPTS_DIR = Path(__file__).parent
_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False)


@lru_cache(maxsize=32)
def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError as exc:
        raise PromptTemplateError(f"Prompt file {path} does not exist.") from exc
    except yaml.YAMLError as exc:
        raise PromptTemplateError(f"Prompt file {path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise PromptTemplateError(f"Prompt file {path} must hold a mapping of template names to templates.")
    return data


def merge_templates(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge `overrides` into a copy of `base`."""
    merged = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_templates(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_prompt_templates(kind: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The templates for an agent kind (`code_agent`, `tool_calling_agent`, ...), with user overrides."""
    templates = merge_templates(_read_yaml(PROMPTS_DIR / "common.yaml"), _read_yaml(PROMPTS_DIR / f"{kind}.yaml"))
    return merge_templates(templates, overrides or {})


def load_prompt_overlay(name: str) -> dict[str, Any]:
    """A prompt file laid over an agent kind's own (e.g. `code_agent_structured` over `code_agent`)."""
    return copy.deepcopy(_read_yaml(PROMPTS_DIR / f"{name}.yaml"))


@lru_cache(maxsize=256)
def _compile(source: str) -> jinja2.Template:
    try:
        return _ENV.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise PromptTemplateError(f"Prompt template has a syntax error on line {exc.lineno}: {exc.message}") from exc


def render(templates: dict[str, Any], key: str, **variables: Any) -> str:
    """Render the template at dotted `key` (e.g. `planning.initial_plan`) with `variables`."""
    node: Any = templates
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise PromptTemplateError(f"Prompt template {key!r} is missing; add it to the prompt YAML or overrides.")
        node = node[part]
    if not isinstance(node, str):
        raise PromptTemplateError(f"Prompt template {key!r} must be a string.")
    try:
        return _compile(node).render(**variables).strip()
    except jinja2.UndefinedError as exc:
        raise PromptTemplateError(f"Prompt template {key!r} uses an undefined variable: {exc.message}") from exc
