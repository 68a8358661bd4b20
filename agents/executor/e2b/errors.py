"""The E2B SDK's errors in sentences an operator or a person can act on, naming the setting to change.

Why one place: the same SDK exception (a 401, a 429, a sandbox not found) can surface from creating a sandbox,
a command's stream or a file call; each caller passes a hint (which sandbox, which settings) and gets one clear
sentence. The SDK's own text is kept at the end for the operator.
"""

from __future__ import annotations

from .settings import SETTING_NAMES


def describe(exc: BaseException, hint: str = "") -> str:
    """One sentence for an exception of the E2B SDK (or its transport), with `hint` (where it happened) first."""
    try:
        from e2b import exceptions as e2b_exc
    except ImportError:  # the backend is only used with the SDK installed; keep the message anyway
        return f"{hint}{type(exc).__name__}: {exc}"
    detail = str(exc).strip() or type(exc).__name__
    if isinstance(exc, e2b_exc.AuthenticationException):
        text = f"E2B refused the API key: check {SETTING_NAMES['api_key']}"
    elif isinstance(exc, e2b_exc.RateLimitException):
        text = ("E2B refused to start another sandbox (the team's quota of concurrent sandboxes or requests is "
                "used up): close idle chats, lower AGENTDECK_MAX_SANDBOXES or raise the team's limit at E2B")
    elif isinstance(exc, e2b_exc.SandboxNotFoundException | e2b_exc.SandboxNotRunningException):
        text = (f"the E2B sandbox is gone (killed, or it outlived {SETTING_NAMES['timeout_s']} without the app "
                f"renewing it)")
    elif isinstance(exc, e2b_exc.TemplateException) or "template" in detail.lower() and "not found" in detail.lower():
        text = f"E2B has no usable template of that name: check {SETTING_NAMES['template']}"
    elif isinstance(exc, e2b_exc.SandboxUnreachableException | e2b_exc.TimeoutException):
        text = (f"the E2B sandbox did not answer in time (the connection to it was cut or is slow; "
                f"{SETTING_NAMES['domain']}/{SETTING_NAMES['api_url']} say where the service is)")
    elif type(exc).__name__ == "ConnectError" or isinstance(exc, OSError):
        text = ("the connection to the E2B sandbox was cut (the network or the service dropped it; the sandbox "
                "may still run until its timeout)")
    elif isinstance(exc, e2b_exc.ServiceBusyException):
        text = "E2B is busy (503): try again in a moment"
    else:
        text = f"the E2B service failed ({type(exc).__name__})"
    return f"{hint}{text}: {detail[:500]}"
