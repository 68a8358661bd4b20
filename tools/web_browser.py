"""web_browser: a real browser the agent drives and sees: open, click, type, scroll, back, find.

Why: some pages only show their content after scripts run or after a click, and a vision model reads a page's
layout from a screenshot. After each action the tool returns the page's title, URL and a text excerpt, with a
screenshot the agent loop gives a vision model as an observation image (`TextAndImage`; where only text can go,
sandboxed code and events, it is the text).

The browser is the system's Chromium driven by Playwright (tools/browser_host.py), never a downloaded one. Every
request it makes is checked with visit_webpage's address rules (no private, loopback or link-local address,
DNS rebinding caught at connect), unless `allow_private` (tests, local use) says otherwise. Each session (the
agent whose run calls the tool) has its own browser context: no cookies or storage are shared between them.
"""
from __future__ import annotations

import re
import time
import weakref
from typing import Any, ClassVar

from agents.errors import ToolError
from agents.models.images import ImageLimits, TextAndImage, inspect_image
from agents.tooling.base import Tool
from agents.tooling.context import ToolContext
from tools._common import env_flag
from tools.browser_host import REDIRECT_MARK, BrowserHost, Session, shared_host
from tools.visit_webpage import ALLOW_PRIVATE_ENV

ACTIONS = ("open", "click", "type", "scroll", "back", "find")
EXCERPT_CHARS = 1500
FIND_MATCHES = 5
POPUP_WAIT_MS = 250
#: A target that looks like CSS (starts with #, ., [ or a tag name followed by one of them) is a selector.
_LOADED_JS = f"() => document.readyState === 'complete' && !document.documentElement.hasAttribute('{REDIRECT_MARK}')"
#: Whether clicking an element opens another tab: a link's (or its <base>'s) target, a submit button's form target.
_OPENS_TAB_JS = """el => {
  const link = el.closest('a[href], area[href]');
  const button = link ? null : el.closest('button, input[type=submit], input[type=image]');
  const form = button && button.type !== 'button' && button.type !== 'reset' ? button.form : null;
  let target = link ? link.getAttribute('target') : form ? (button.getAttribute('formtarget') || form.target) : null;
  const base = document.querySelector('base[target]');
  if ((link || form) && !target && base) target = base.getAttribute('target');
  return !!target && !['_self', '_parent', '_top'].includes(target.trim().toLowerCase());
}"""
_SELECTOR = re.compile(r"^\s*([#.\[]|[a-zA-Z][a-zA-Z0-9-]*\s*([#.\[:>]|$))")


class WebBrowserTool(Tool):
    """Drives a headless Chromium; each call does one action and returns the page with a screenshot."""

    name = "web_browser"
    description = (
        "A web browser you can see. Each call does one action and returns the page's title, URL, a text excerpt "
        "and a screenshot. Actions: 'open' (url), 'click' (target: the visible text of a link or button, or a CSS "
        "selector), 'type' (target: a CSS selector of a field, text: what to type, submit: press Enter after), "
        "'scroll' (target: 'down' or 'up'), 'back', 'find' (text: words to find on the page)."
    )
    inputs = {
        "action": {"type": "string", "description": "One of: open, click, type, scroll, back, find."},
        "url": {"type": "string", "description": "For 'open': the http(s) URL.", "nullable": True},
        "target": {"type": "string", "nullable": True,
                   "description": "For 'click': visible text or a CSS selector; 'type': a CSS selector; "
                                  "'scroll': 'down' or 'up'."},
        "text": {"type": "string", "description": "For 'type': the text to type; 'find': the text to find.",
                 "nullable": True},
        "submit": {"type": "boolean", "description": "For 'type': press Enter after typing (default false).",
                   "nullable": True},
    }
    output_type = "any"
    requires_approval = True  # opens any page the model chooses, clicks and types in it
    approval_reason = "drives a web browser on pages the agent chose"
    takes_context: ClassVar[bool] = True

    def __init__(self, allow_private: bool | None = None, host: BrowserHost | None = None) -> None:
        super().__init__()
        self.allow_private = env_flag(ALLOW_PRIVATE_ENV) if allow_private is None else allow_private
        self.host = host
        self._keys: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    # ------------------------------------------------------------------ entry point
    def forward(self, action: str, url: str | None = None, target: str | None = None, text: str | None = None,
                submit: bool | None = None, *, context: ToolContext) -> TextAndImage:
        action = (action or "").strip().lower()
        if action not in ACTIONS:
            raise ToolError(f"Unknown action {action!r}: use one of {', '.join(ACTIONS)}.")
        host = self.host or shared_host()
        key = self._session_key(context)
        limits = host.limits
        return host.submit(lambda: self._act(host, key, action, url, target, text, bool(submit)),
                           timeout=limits.timeout * 3 + 30)

    def close_session(self, context: ToolContext) -> None:
        """Close this session's browser context (its cookies and pages go with it)."""
        host = self.host or shared_host()
        key = self._session_key(context)
        host.submit(lambda: host.end_session(key), timeout=30)

    def _session_key(self, context: ToolContext) -> str:
        """One key per agent (its decision broker lives as long as it does), else per run."""
        owner = getattr(context.run, "broker", None)
        if owner is None:
            return f"run:{context.run.run_id}"
        try:
            key = self._keys.get(owner)
            if key is None:
                key = self._keys[owner] = f"agent:{id(owner)}:{len(self._keys)}:{id(self)}"
                host = self.host or shared_host()
                weakref.finalize(owner, host.retire, key)
            return key
        except TypeError:  # not weakly referenceable
            return f"run:{context.run.run_id}"

    # ------------------------------------------------------------------ actions (on the browser's thread)
    def _act(self, host: BrowserHost, key: str, action: str, url: str | None, target: str | None,
             text: str | None, submit: bool) -> TextAndImage:
        session = host.session(key, self.allow_private)
        page = session.page
        note = ""
        try:
            if action == "open":
                self._open(session, _required(url, "url", action))
            elif action == "click":
                self._click(session, _required(target, "target", action), host.limits.timeout)
            elif action == "type":
                field = page.locator(_required(target, "target", action)).first
                field.fill(_required(text, "text", action))
                if submit:
                    with _navigation_allowed(session):
                        field.press("Enter")
            elif action == "scroll":
                direction = (target or "down").strip().lower()
                if direction not in ("down", "up"):
                    raise ToolError("scroll's target is 'down' or 'up'.")
                page.mouse.wheel(0, host.limits.height * 0.8 * (1 if direction == "down" else -1))
                page.wait_for_timeout(150)  # the page's own scroll handlers
            elif action == "back":
                if page.go_back() is None and page.url in ("about:blank", ""):
                    note = "There is no earlier page."
            else:
                note = self._find(page, _required(text, "text", action))
            _settle(session.page, host.limits.timeout)  # a popup may have become the page
            return self._observe(session, host, note)
        except ToolError:
            raise
        except Exception as exc:
            raise ToolError(_explain(exc, action, session)) from exc

    def _open(self, session: Session, url: str) -> None:
        url = url.strip()
        if not re.match(r"^https?://", url, re.IGNORECASE):
            raise ToolError(f"Cannot open {url!r}: only http:// and https:// URLs are supported.")
        with _navigation_allowed(session):
            session.page.goto(url, wait_until="load")

    def _click(self, session: Session, target: str, timeout: float) -> None:
        page = session.page
        locator = page.locator(target) if _SELECTOR.match(target) else page.get_by_text(target, exact=False)
        if locator.count() == 0 and _SELECTOR.match(target):
            locator = page.get_by_text(target, exact=False)
        if locator.count() == 0:
            raise ToolError(f"Nothing on the page matches {target!r}: give a link's or button's visible text, "
                            "or a CSS selector.")
        opens_tab = bool(locator.first.evaluate(_OPENS_TAB_JS))
        popups = session.popups
        with _navigation_allowed(session):
            locator.first.click()
        if not opens_tab:  # a script may still open one (window.open): give it a moment
            page.wait_for_timeout(POPUP_WAIT_MS)
            return
        # The tab is announced some time after click() returns (later on a loaded machine): wait for it, not a
        # fixed time, for at most the action timeout (a blocked or refused tab leaves the agent where it was).
        deadline = time.monotonic() + timeout
        while session.popups == popups and time.monotonic() < deadline:
            page.wait_for_timeout(50)

    @staticmethod
    def _find(page: Any, wanted: str) -> str:
        body = page.inner_text("body") if page.locator("body").count() else ""
        spots = [m.start() for m in re.finditer(re.escape(wanted), body, re.IGNORECASE)][:FIND_MATCHES + 1]
        if not spots:
            return f"{wanted!r} is not on this page."
        page.get_by_text(wanted, exact=False).first.scroll_into_view_if_needed()
        lines = [f"{wanted!r} found {'more than ' + str(FIND_MATCHES) if len(spots) > FIND_MATCHES else len(spots)}"
                 " time(s) (the first scrolled into view):"]
        for start in spots[:FIND_MATCHES]:
            lines.append("- ..." + " ".join(body[max(0, start - 80): start + len(wanted) + 80].split()) + "...")
        return "\n".join(lines)

    def _observe(self, session: Session, host: BrowserHost, note: str) -> TextAndImage:
        page = session.page
        refused = _refused_navigation(session)
        title = page.title()
        body = page.inner_text("body") if page.locator("body").count() else ""
        excerpt = " ".join(body.split())
        if len(excerpt) > EXCERPT_CHARS:
            excerpt = excerpt[:EXCERPT_CHARS] + f"... [{len(excerpt) - EXCERPT_CHARS:,} more characters]"
        shot = page.screenshot(type="jpeg", quality=70, full_page=False)
        image = inspect_image(shot, "screenshot.jpg", ImageLimits())
        parts = [f"Title: {title}", f"URL: {page.url}"]
        if refused:
            parts.append(f"Refused: {refused}")
        if note:
            parts.append(note)
        parts.append(f"Text: {excerpt}" if excerpt else "Text: (none)")
        return TextAndImage("\n".join(parts), image)


class _navigation_allowed:
    """Around an action that may navigate: a navigation the route refused becomes a clear ToolError."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def __enter__(self) -> None:
        self.session.fetcher.refusals.clear()

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if exc is not None and self.session.fetcher.refusals and "ERR_BLOCKED_BY_CLIENT" in str(exc):
            raise ToolError(self.session.fetcher.refusals[-1]) from exc


def _refused_navigation(session: Session) -> str:
    """The reason a navigation (a click's, a form's) was refused, when the page shows Chromium's error page."""
    refusals = session.fetcher.refusals
    page_url = session.page.url or ""
    if refusals and page_url.startswith("chrome-error:"):
        return refusals[-1]
    return ""


def _settle(page: Any, timeout: float) -> None:
    """Let a navigation an action started finish loading, through the pages redirects became, for at most
    `timeout` seconds (a page still loading then is shown as it is). Polled, because a navigation may replace
    the document between any two looks at it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            page.wait_for_load_state("load")
            if page.evaluate(_LOADED_JS):
                return
        except Exception:  # the document was replaced while we looked: look again
            pass
        page.wait_for_timeout(50)


def _required(value: str | None, name: str, action: str) -> str:
    if value is None or not str(value).strip():
        raise ToolError(f"The {action!r} action needs {name!r}.")
    return str(value)


def _explain(exc: Exception, action: str, session: Session) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if session.fetcher.refusals and "ERR_BLOCKED_BY_CLIENT" in str(exc):
        return session.fetcher.refusals[-1]
    if "Timeout" in type(exc).__name__ or "Timeout" in text:
        return f"The {action!r} action timed out: {text}. The page is slow, or the target is not on it."
    return f"The {action!r} action failed: {text}"
