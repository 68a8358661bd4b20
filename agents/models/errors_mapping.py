"""Turn provider exceptions (litellm, openai, huggingface_hub, httpx, ...) into AgentDeck errors.

Why: every adapter must fail the same way whichever backend raised. Classification looks at the
exception's class names and HTTP status code only, so no provider library has to be imported here.
"""
from __future__ import annotations

import re
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from agents.errors import (
    ConfigurationError,
    ContentFilteredError,
    ContextWindowExceededError,
    MissingApiKeyError,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelError,
    ModelNotFoundError,
    ModelRateLimitError,
)
from agents.models.retry_after import retry_after_of

# Categories of failure. The first four are worth retrying.
RATE_LIMIT = "rate_limit"
SERVER = "server"
TIMEOUT = "timeout"
CONNECTION = "connection"  # the connection dropped after it was made (often mid-stream)
CONNECT = "connect"  # no connection at all: refused, unknown host, timed out while connecting
AUTH = "auth"
MISSING_KEY = "missing_key"  # no key was given: retrying cannot help
NOT_FOUND = "not_found"
CONTEXT = "context"
CONTENT = "content"
BAD_REQUEST = "bad_request"
OFFLINE = "offline"  # the library refuses to use the network (HF_HUB_OFFLINE): retrying cannot help
OTHER = "other"

RETRYABLE = frozenset({RATE_LIMIT, SERVER, TIMEOUT, CONNECTION, CONNECT})

# Environment variable holding the key of each provider, for the "what to do" part of messages.
PROVIDER_KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "huggingface": "HF_TOKEN",
    "hf": "HF_TOKEN",
    "gemini": "GEMINI_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "xai": "XAI_API_KEY",
    "cohere": "COHERE_API_KEY",
    "fireworks_ai": "FIREWORKS_AI_API_KEY",
    "cerebras": "CEREBRAS_API_KEY",
    "perplexity": "PERPLEXITYAI_API_KEY",
}

_NAME_CATEGORIES: list[tuple[str, str]] = [
    ("offlinemodeisenabled", OFFLINE),
    ("midstreamfallback", CONNECTION),  # litellm: the stream broke after it started
    ("contextwindowexceeded", CONTEXT),
    ("contentpolicyviolation", CONTENT),
    ("authenticationerror", AUTH),
    ("permissiondenied", AUTH),
    ("gatedrepoerror", AUTH),
    ("notfounderror", NOT_FOUND),
    ("repositorynotfound", NOT_FOUND),
    ("ratelimit", RATE_LIMIT),
    ("serviceunavailable", SERVER),
    ("internalservererror", SERVER),
    ("badgateway", SERVER),
    ("overloadederror", SERVER),
    ("timeout", TIMEOUT),
    ("apiconnectionerror", CONNECTION),
    ("connecterror", CONNECTION),
    ("connectionerror", CONNECTION),
    ("remoteprotocolerror", CONNECTION),
    ("readerror", CONNECTION),
    ("networkerror", CONNECTION),
    ("incompleteread", CONNECTION),
    ("chunkedencodingerror", CONNECTION),
    ("unknownprovider", BAD_REQUEST),
    ("badrequest", BAD_REQUEST),
    ("unprocessableentity", BAD_REQUEST),
]

# Class names meaning "no connection was ever made"; matched exactly, as "connectionerror" is broader.
_CONNECT_NAMES = frozenset({"connecterror", "connecttimeout", "connectionrefusederror", "gaierror",
                            "nameresolutionerror", "newconnectionerror"})
_MISSING_KEY_HINTS = ("missing credentials", "api_key client option must be set", "missing api key",
                      "api key is missing", "no api key provided", "api_key must be set")
_CONTEXT_HINTS = ("context length", "context window", "maximum context", "too many tokens", "prompt is too long",
                  "input is too long", "reduce the length", "max_tokens must be", "exceeds the model")
_CONTENT_HINTS = ("content policy", "content_filter", "content management policy", "safety system", "flagged")
_SECRET_PATTERNS = [re.compile(p) for p in (r"sk-[A-Za-z0-9_\-*]{6,}", r"hf_[A-Za-z0-9]{6,}", r"(?i)bearer\s+\S+")]


@dataclass
class ErrorInfo:
    """What kind of failure an exception is, and the details useful in a message."""
    category: str
    status_code: int | None
    detail: str
    retry_after: float | None = None
    reason: str = ""  # a few words for the person: why the call failed and may be retried

    @property
    def retryable(self) -> bool:
        return self.category in RETRYABLE


def _status_code(exc: BaseException) -> int | None:
    for holder in (exc, getattr(exc, "response", None)):
        code = getattr(holder, "status_code", None) if holder is not None else None
        if isinstance(code, int):
            return code
    return None


def redact(text: str, secrets: list[str] | tuple[str, ...] = ()) -> str:
    """Remove keys from `text`: the known `secrets` and anything shaped like a provider key."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub("***", text)
    return text


def _chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(chain) < 6:  # look through `raise ... from ...` wrappers too
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _transport_cause(chain: list[BaseException]) -> tuple[str, str] | None:
    """(category, reason) when the real cause lies under a library's generic wrapper (litellm reports a
    refused connection or a missing key as "InternalServerError", HTTP 500)."""
    generic = False
    for item in chain:  # the most specific cause anywhere in the chain wins
        names = {cls.__name__.lower() for cls in type(item).__mro__}
        text = str(item).lower()
        if any(hint in text for hint in _MISSING_KEY_HINTS):
            return MISSING_KEY, "no API key"
        if isinstance(item, ConnectionRefusedError) or "connectionrefusederror" in names:
            return CONNECT, "connection refused"
        if isinstance(item, socket.gaierror) or names & {"gaierror", "nameresolutionerror"}:
            return CONNECT, "host name not found"
        if "connecttimeout" in names:
            return CONNECT, "timed out while connecting"
        generic = generic or bool(names & _CONNECT_NAMES)
    return (CONNECT, "could not connect") if generic else None


def _stream_fault(chain: list[BaseException], lowered: str) -> str:
    """A reason for a connection-category failure: what went wrong with the stream."""
    if any(isinstance(item, ValueError) and type(item).__name__ == "JSONDecodeError" for item in chain):
        return "the server sent a stream chunk that is not JSON"
    if "repeating the same chunk" in lowered:
        return "the model kept repeating the same chunk"
    return "the connection dropped"


def classify_error(exc: BaseException) -> ErrorInfo:
    """Sort an exception from any backend into one of the categories above."""
    chain = _chain(exc)
    status = next((code for code in map(_status_code, chain) if code is not None), None)
    detail = " ".join(str(exc).split())[:400] or type(exc).__name__
    lowered = " ".join(str(item) for item in chain).lower()
    transport = _transport_cause(chain)
    if transport is not None:  # no HTTP answer was involved: litellm's "500" is made up
        return ErrorInfo(category=transport[0], status_code=None, detail=detail, reason=transport[1])
    category = OTHER
    for item in chain:
        names = [cls.__name__.lower() for cls in type(item).__mro__]
        found = next((cat for key, cat in _NAME_CATEGORIES if any(key in name for name in names)), None)
        if found is not None:
            category = found
            break
        if isinstance(item, TimeoutError):
            category = TIMEOUT
            break
        if isinstance(item, ConnectionError):
            category = CONNECTION
            break
    if category in (OTHER, BAD_REQUEST, SERVER) and status is not None:
        if status in (401, 403):
            category = AUTH
        elif status == 404:
            category = NOT_FOUND
        elif status == 408:
            category = TIMEOUT
        elif status == 413:
            category = CONTEXT
        elif status == 429:
            category = RATE_LIMIT
        elif status >= 500:
            category = SERVER
        elif 400 <= status < 500 and category == OTHER:
            category = BAD_REQUEST
    if category in (OTHER, BAD_REQUEST):
        if any(hint in detail.lower() for hint in _CONTEXT_HINTS):
            category = CONTEXT
        elif any(hint in detail.lower() for hint in _CONTENT_HINTS):
            category = CONTENT
    if category in (CONNECTION, TIMEOUT) and status == 500:
        status = None  # litellm's placeholder for "no HTTP error at all"
    if category in (CONNECTION, SERVER) and "repeating the same chunk" in lowered:
        reason = "the model kept repeating the same chunk"
    elif category == CONNECTION:
        reason = _stream_fault(chain, lowered)
    else:
        reason = _REASONS.get(category, category.replace("_", " "))
        if status is not None and category in (RATE_LIMIT, SERVER):
            reason += f" (HTTP {status})"
    return ErrorInfo(category=category, status_code=status, detail=detail, retry_after=retry_after_of(exc),
                     reason=reason)


_REASONS = {RATE_LIMIT: "rate limited", SERVER: "server error", TIMEOUT: "no answer in time"}


def host_of(endpoint: str | None) -> str:
    """`host:port` of an api_base URL, or the endpoint's name as given (e.g. "openai")."""
    if not endpoint:
        return "the provider"
    parsed = urlparse(endpoint)
    return parsed.netloc or endpoint


def provider_of(model_id: str) -> str:
    """The provider part of a model string such as `openai/gpt-4.1-mini` (empty when none)."""
    return model_id.split("/", 1)[0].lower() if "/" in model_id else ""


def to_model_error(
    exc: BaseException,
    model_id: str,
    *,
    attempts: int = 1,
    key_env: str | None = None,
    endpoint: str | None = None,
    secrets: tuple[str, ...] = (),
    info: ErrorInfo | None = None,
) -> ModelError | ConfigurationError:
    """One clear AgentDeck error, whose message says what went wrong and what to do about it."""
    if isinstance(exc, (ModelError, ConfigurationError)):
        return exc  # already one of ours (a missing key is a ConfigurationError): as it is
    info = info or classify_error(exc)
    detail = redact(info.detail, secrets)
    key_env = key_env or PROVIDER_KEY_ENV.get(provider_of(model_id), "the provider's API key variable")
    where = endpoint or "the provider"
    tries = f" after {attempts} attempt{'s' if attempts != 1 else ''}"
    status = f" (HTTP {info.status_code})" if info.status_code else ""
    if info.category == MISSING_KEY:
        return MissingApiKeyError(missing_key_message(model_id, [key_env]))
    if info.category == AUTH:
        return ModelAuthenticationError(
            f"{where} refused the credentials for model '{model_id}'{status}. Set {key_env} in the environment "
            f"to a valid key (or pass api_key=), and check the account has access to this model. Details: {detail}"
        )
    if info.category == NOT_FOUND:
        return ModelNotFoundError(
            f"Model '{model_id}' was not found at {where}{status}. Check the model name (e.g. "
            f"'openai/gpt-4.1-mini', 'anthropic/claude-sonnet-4-5') and the api_base. Details: {detail}"
        )
    if info.category == CONTEXT:
        return ContextWindowExceededError(
            f"The conversation is longer than model '{model_id}' accepts{status}. Lower max_steps, shorten the task "
            f"or the tool outputs, or pick a model with a larger context window. Details: {detail}"
        )
    if info.category == CONTENT:
        return ContentFilteredError(
            f"{where} refused to answer with model '{model_id}' because of its content policy{status}. "
            f"Rephrase the task. Details: {detail}"
        )
    if info.category == RATE_LIMIT:
        return ModelRateLimitError(
            f"Model '{model_id}' is still rate-limited{tries}{status}. Wait a minute, lower the request rate, "
            f"or allow more retries (RetryPolicy(max_retries=...); the app's AGENTDECK_MODEL_MAX_RETRIES). "
            f"Details: {detail}"
        )
    if info.category == OFFLINE:
        return ModelConnectionError(
            f"Model '{model_id}' needs the network but offline mode is on (HF_HUB_OFFLINE). Unset HF_HUB_OFFLINE, "
            f"or choose a local model such as 'embedded' or 'transformers:<folder>'. Details: {detail}"
        )
    if info.category == CONNECT:
        return ModelConnectionError(
            f"Could not connect to {host_of(endpoint)} for model '{model_id}' ({info.reason}){tries}. Check that "
            f"the server is running, the api_base and the network. Details: {detail}"
        )
    if info.category == TIMEOUT:
        return ModelConnectionError(
            f"{host_of(endpoint)} did not answer in time for model '{model_id}'{tries}{status}. Check that the "
            f"server is running and not overloaded, or raise the timeout. Details: {detail}"
        )
    if info.category == CONNECTION:
        return ModelConnectionError(
            f"The connection to {host_of(endpoint)} failed part-way for model '{model_id}' ({info.reason}){tries}. "
            f"Try again; if it keeps happening, check the network or choose another model/provider. "
            f"Details: {detail}"
        )
    if info.category == SERVER:
        return ModelConnectionError(
            f"{where} kept failing with server errors for model '{model_id}'{tries}{status}. Try again later or "
            f"choose another model/provider. Details: {detail}"
        )
    return ModelError(f"Model '{model_id}' call failed{status}: {detail}")


def missing_key_message(model_id: str, variables: list[str]) -> str:
    """What to do when no key is set: which variable(s), and the escape hatch for keyless local servers."""
    names = " and ".join(v for v in variables if v) or "the provider's API key variable"
    return (f"Model '{model_id}' needs an API key and none is set. Set {names} in the environment (or pass "
            f"api_key=). A local OpenAI-compatible server that needs no key accepts any value, e.g. 'none'.")


def describe_exception(exc: Any) -> str:
    """A short, secret-free one-line description for logs."""
    return redact(f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
