"""The web_browser tool's Chromium: one process, launched lazily, one browser context per session.

Why it is built this way:
- Playwright's sync API belongs to the thread that started it, while tool calls come from many run threads; so
  one worker thread owns Playwright and every browser action is a job submitted to it (`BrowserHost.submit`).
- Every request the browser makes (pages, redirects, scripts, images, XHR) goes through `context.route`, and
  Python makes it: the scheme must be http(s), the host is resolved and checked with visit_webpage's own
  address rules, and the connection is made by visit_webpage's guarded adapter, which checks the peer it really
  reached (DNS rebinding). A redirect's target is checked before it is followed: a script's or image's is
  followed here, a page's becomes a page that sends the browser on (a new, routed request); Chromium never
  gets a redirect response, because the request a fulfilled redirect leads to bypasses the route.
- Around the route, Chromium reaches nothing: it resolves no host (`--host-resolver-rules`), its proxy is a
  closed port with loopback not exempted (what bypasses the route, an IP address included, fails), WebRTC may
  not use UDP, service workers are blocked and WebSockets are never connected.
- Each session gets its own `BrowserContext` (no shared cookies or storage); the host keeps at most
  `max_sessions` of them (the least recently used is closed) and each at most `max_pages` pages.
"""
from __future__ import annotations

import atexit
import html
import logging
import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urljoin, urlsplit

from agents.errors import ToolError
from tools import visit_webpage as vw
from tools._common import user_agent

logger = logging.getLogger(__name__)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-features=DnsOverHttps,NetworkPrediction", "--dns-prefetch-disable",
                 "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9",
                 "--proxy-bypass-list=<-loopback>", "--force-webrtc-ip-handling-policy=disable_non_proxied_udp"]
MAX_REDIRECTS = 10
#: The attribute of the page a redirect is turned into (the tool waits for the next page while it shows).
REDIRECT_MARK = "data-agentdeck-redirect"
_REDIRECT_CODES = {301, 302, 303, 307, 308}
#: Response headers Chromium must not be handed back as they came (the body is already decoded and whole).
_DROPPED_HEADERS = {"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"}

T = TypeVar("T")


@dataclass(frozen=True)
class BrowserLimits:
    """The bounds of one browser session: the viewport (the screenshot's size), how long a page may load, how
    much one response may hold, how many pages one session may have open and how many sessions are kept."""
    width: int = 1024
    height: int = 768
    timeout: float = 15.0
    max_response_bytes: int = 10_000_000
    max_pages: int = 4
    max_sessions: int = 8


@dataclass
class Session:
    """One session's browser context and the page the agent is looking at."""
    context: Any
    page: Any
    fetcher: _GuardedFetcher
    #: Pages opened from this context's pages so far (followed or closed at the cap): a click that opens a tab
    #: waits for this to grow, since Playwright announces the tab some time after click() returns.
    popups: int = 0


class BrowserHost:
    """The Chromium process and the sessions' contexts, all used from one worker thread."""

    def __init__(self, limits: BrowserLimits = BrowserLimits(), executable: str = CHROMIUM) -> None:
        self.limits = limits
        self.executable = executable
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._playwright: Any = None
        self._browser: Any = None
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        #: Sessions whose agent is gone, closed by the next job (a finalizer may run inside any lock, so it
        #: only appends here: deque.append takes none).
        self._retired: deque[str] = deque()

    # ------------------------------------------------------------------ the worker thread
    def submit(self, job: Callable[[], T], timeout: float) -> T:
        """Run `job` on the browser's thread and wait at most `timeout` seconds for it."""
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="web-browser")
            future: Future[T] = self._executor.submit(job)
        try:
            return future.result(timeout=timeout)
        except FutureTimeout as exc:
            raise ToolError(f"The browser did not answer within {timeout:g}s (a slow page, or the browser is busy "
                            "with another session's). Try again, or another page.") from exc

    def close(self) -> None:
        """Close every context and the browser (at app stop); a later call launches a new one."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is None:
            return
        executor.submit(self._close_all).result(timeout=30)
        executor.shutdown(wait=True)

    def _close_all(self) -> None:
        for session in self._sessions.values():
            _quietly(session.context.close)
        self._sessions.clear()
        if self._browser is not None:
            _quietly(self._browser.close)
        if self._playwright is not None:
            _quietly(self._playwright.stop)
        self._browser = self._playwright = None

    # ------------------------------------------------------------------ sessions (browser thread only)
    def retire(self, key: str) -> None:
        """Session `key`'s agent is gone: its context is closed by the browser's next job. Safe in a finalizer."""
        self._retired.append(key)

    def session(self, key: str, allow_private: bool) -> Session:
        """The session `key`'s context and page, made on first use; the least recently used is closed past the cap."""
        while self._retired:
            self.end_session(self._retired.popleft())
        found = self._sessions.get(key)
        if found is not None and not found.page.is_closed():
            self._sessions.move_to_end(key)
            return found
        if found is not None:  # its page was closed (by a script): start the session again
            _quietly(found.context.close)
            del self._sessions[key]
        while len(self._sessions) >= self.limits.max_sessions:
            _, oldest = self._sessions.popitem(last=False)
            _quietly(oldest.context.close)
        context = self._browser_process().new_context(
            viewport={"width": self.limits.width, "height": self.limits.height}, service_workers="block",
            accept_downloads=False, user_agent=user_agent())
        context.set_default_timeout(self.limits.timeout * 1000)
        context.set_default_navigation_timeout(self.limits.timeout * 1000)
        fetcher = _GuardedFetcher(allow_private, self.limits)
        context.route("**/*", fetcher.handle)
        context.route_web_socket("**/*", lambda ws: ws.close())  # never connected to any server
        session = Session(context, context.new_page(), fetcher)
        context.on("page", lambda page: self._follow_popup(session, page))
        self._sessions[key] = session
        return session

    def end_session(self, key: str) -> None:
        session = self._sessions.pop(key, None)
        if session is not None:
            _quietly(session.context.close)

    def _follow_popup(self, session: Session, page: Any) -> None:
        """A page a click opened (target=_blank, window.open) becomes the one the agent sees, up to the cap."""
        session.popups += 1
        if len(session.context.pages) > self.limits.max_pages:
            _quietly(page.close)
        else:
            session.page = page

    def _browser_process(self) -> Any:
        if self._browser is None:
            try:
                from playwright.sync_api import sync_playwright
            except ImportError as exc:
                raise ToolError("web_browser needs the playwright package (pip install playwright).") from exc
            self._playwright = sync_playwright().start()
            try:
                self._browser = self._playwright.chromium.launch(executable_path=self.executable,
                                                                 args=CHROMIUM_ARGS)
            except Exception as exc:
                _quietly(self._playwright.stop)
                self._playwright = None
                raise ToolError(f"Could not start Chromium at {self.executable}: {exc}. Install the system's "
                                "Chromium (apt-get install chromium); a downloaded browser is never used.") from exc
        return self._browser


class _GuardedFetcher:
    """Makes each of a context's requests in Python, under visit_webpage's address rules."""

    def __init__(self, allow_private: bool, limits: BrowserLimits) -> None:
        import requests

        self.checker = vw.VisitWebpageTool(allow_private=allow_private)
        self.limits = limits
        self.http = requests.Session()
        self.http.trust_env = False  # a proxy would do the connecting, and the peer check would not apply
        if not allow_private:
            adapter = vw._guarded_adapter_class()()
            self.http.mount("http://", adapter)
            self.http.mount("https://", adapter)
        #: Why the last refused request was refused (the tool reports it when a navigation fails).
        self.refusals: list[str] = []

    def handle(self, route: Any) -> None:
        request = route.request
        url = request.url
        scheme = urlsplit(url).scheme
        if scheme not in ("http", "https"):
            self._refuse(route, f"{url[:100]}: only http:// and https:// addresses can be opened.")
            return
        try:
            self.checker._check_url(url)
            reply = self._fetch(request)
            for _hop in range(MAX_REDIRECTS + 1):
                target = _redirect_target(url, reply)
                if target is None:
                    break
                self._check_target(target)
                if request.is_navigation_request():
                    reply = _redirect_page(target)  # a new navigation: a new request, routed and checked
                    break
                url, reply = target, self._fetch(request, target)  # a script's or image's: followed here
            else:
                raise ToolError(f"Too many redirects (more than {MAX_REDIRECTS}) from {request.url[:200]}.")
        except ToolError as exc:
            self._refuse(route, str(exc))
            return
        route.fulfill(**reply)

    def _check_target(self, target: str) -> None:
        if urlsplit(target).scheme not in ("http", "https"):
            raise ToolError(f"Refusing a redirect to {target[:100]}: only http:// and https:// addresses can be "
                            "opened.")
        self.checker._check_url(target)

    def _fetch(self, request: Any, url: str | None = None) -> dict[str, Any]:
        """Make `request` (or a GET of `url`, a redirect's target) with the guarded session; never follows."""
        import requests

        headers = {k: v for k, v in request.all_headers().items() if not k.startswith(":")}  # cookies too
        method, data = (request.method, request.post_data_buffer) if url is None else ("GET", None)
        try:
            response = self.http.request(method, url or request.url, headers=headers, data=data,
                                         timeout=self.limits.timeout, allow_redirects=False, stream=True)
        except vw.BlockedAddressError:
            raise
        except requests.exceptions.RequestException as exc:
            raise ToolError(f"Could not fetch {request.url}: {vw._short_reason(exc)}.") from exc
        with response:
            body = response.raw.read(self.limits.max_response_bytes + 1, decode_content=True)
        if len(body) > self.limits.max_response_bytes:
            body = body[: self.limits.max_response_bytes]
        kept = {k: v for k, v in response.headers.items() if k.lower() not in _DROPPED_HEADERS}
        return {"status": response.status_code, "headers": kept, "body": body}

    def _refuse(self, route: Any, reason: str) -> None:
        self.refusals.append(reason)
        del self.refusals[:-8]
        _quietly(lambda: route.abort("blockedbyclient"))


def _redirect_target(url: str, reply: dict[str, Any]) -> str | None:
    if reply["status"] not in _REDIRECT_CODES:
        return None
    location = next((v for k, v in reply["headers"].items() if k.lower() == "location"), None)
    return urljoin(url, location) if location else None


def _redirect_page(target: str) -> dict[str, Any]:
    """A page that sends the browser on to `target` (already checked): Chromium does not route the request a
    fulfilled redirect leads to, so the redirect is never handed to it as one."""
    quoted = html.escape(target, quote=True)
    body = (f'<!DOCTYPE html><html {REDIRECT_MARK}="1"><head><meta http-equiv="refresh" content="0;url={quoted}">'
            f"<title>Redirecting</title></head><body>Redirecting to {html.escape(target)}</body></html>")
    return {"status": 200, "headers": {"Content-Type": "text/html; charset=utf-8"}, "body": body.encode()}


def _quietly(action: Callable[[], Any]) -> None:
    try:
        action()
    except Exception as exc:  # closing what may already be gone
        logger.debug("web_browser: %s", exc)


_SHARED: BrowserHost | None = None
_SHARED_LOCK = threading.Lock()


def shared_host() -> BrowserHost:
    """The process's one browser host (closed at exit)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = BrowserHost()
        return _SHARED


@atexit.register
def close_shared() -> None:
    """Close the shared browser (at app stop and at exit); a later call to the tool launches it again."""
    if _SHARED is not None:
        _quietly(_SHARED.close)
