"""Model adapters. Adapter modules import their heavy libraries lazily, and so does this package:
`import agents.models` loads neither litellm nor torch; `LiteLLMModel` etc. are imported on first access."""
from __future__ import annotations

import importlib
import os
from typing import Any

# litellm would otherwise fetch its model price list from the network when it is first imported.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from agents.models.base import Message, Model, ModelDelta, ModelReply, TokenUsage, ToolCall
from agents.models.loader import load_model, parse_model_string
from agents.models.replay import ReplayModel
from agents.models.selection import default_model_string, describe_model_choice

_LAZY = {
    "LiteLLMModel": "agents.models.litellm_model",
    "InferenceClientModel": "agents.models.inference_client",
    "TransformersModel": "agents.models.transformers_model",
    "EmbeddedModel": "agents.models.embedded",
    "RecordingModel": "agents.models.recorder",
    "RetryPolicy": "agents.models.retry",
}

__all__ = ["EmbeddedModel", "InferenceClientModel", "LiteLLMModel", "Message", "Model", "ModelDelta",
           "ModelReply", "RecordingModel", "ReplayModel", "RetryPolicy", "TokenUsage", "ToolCall",
           "TransformersModel", "default_model_string", "describe_model_choice", "load_model",
           "parse_model_string"]


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'agents.models' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
