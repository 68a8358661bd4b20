"""Exception types of the agent framework.

Every error a user can hit has its own type and a message that says what to do next.
"""
from __future__ import annotations


class AgentDeckError(Exception):
    """Base class of every error raised by AgentDeck."""


class ConfigurationError(AgentDeckError):
    """A setting, argument or file given by the user cannot be used."""


class PromptTemplateError(ConfigurationError):
    """A prompt template is missing or refers to an unknown variable."""


class ToolError(AgentDeckError):
    """A tool failed while running; the message is fed back to the model."""


class ToolInputError(ToolError):
    """A tool was called with arguments that do not match its declared inputs."""


class ToolDefinitionError(ConfigurationError):
    """A Tool subclass or @tool function is declared incorrectly."""


class SharingError(ConfigurationError):
    """An agent or tool cannot be saved, pushed or loaded (its folder, its source, the Hub)."""


class UntrustedCodeError(SharingError):
    """Loading would run code from the Hub, and `trust_remote_code=True` was not given."""


class ModelError(AgentDeckError):
    """A model call failed for good (after any retries)."""


class ModelAuthenticationError(ModelError):
    """The provider refused the credentials."""


class ModelNotFoundError(ModelError):
    """The model name is unknown to the provider, or its files cannot be found."""


class ContextWindowExceededError(ModelError):
    """The prompt is longer than the model accepts."""


class ContentFilteredError(ModelError):
    """The provider refused to answer because of its content policy."""


class ModelRateLimitError(ModelError):
    """The provider kept rate-limiting after all retries."""


class ModelConnectionError(ModelError):
    """The provider could not be reached, or the connection dropped, after all retries."""


class ReplayExhaustedError(ModelError):
    """A ReplayModel was asked for more replies than its script holds."""


class RunBudgetExceededError(AgentDeckError):
    """A run used more model tokens than the budget its operator set; the message names the budget."""


class AgentInterrupted(AgentDeckError):
    """The run was stopped by `interrupt()`."""


class MemoryFileError(AgentDeckError):
    """A saved memory document cannot be loaded (unreadable, malformed, or over the limits)."""


class MemoryIntegrityError(MemoryFileError):
    """A saved memory document's signature does not match: it was changed or signed with another secret."""


class MemorySchemaError(MemoryFileError):
    """A saved memory document has a schema version this AgentDeck cannot read."""


class MemoryTooLargeError(MemoryFileError):
    """A saved memory document is bigger (bytes or steps) than the configured limits."""


class MissingApiKeyError(ModelAuthenticationError):
    """The provider needs an API key and none is set; the message names the variable to set."""


class ImageRefusedError(ConfigurationError):
    """An image cannot be given to the model: not a PNG/JPEG/WebP/GIF, too large, or the model reads no images."""


class FollowUpUnsupportedError(AgentDeckError):
    """A follow-up refers to an earlier answer the model cannot be given (it is not sent earlier messages)."""
