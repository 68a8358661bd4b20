"""Model adapters. Adapter modules import their heavy libraries lazily."""
from agents.models.base import Message, Model, ModelDelta, ModelReply, TokenUsage, ToolCall
from agents.models.replay import ReplayModel

__all__ = ["Message", "Model", "ModelDelta", "ModelReply", "ReplayModel", "TokenUsage", "ToolCall"]
