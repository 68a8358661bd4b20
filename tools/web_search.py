"""web_search: DuckDuckGo web search through the `ddgs` client, formatted as Markdown.

Why it talks to ddgs's DuckDuckGo engine instead of `DDGS().text()`: in ddgs 9.x `DDGS.text()` turns
every non-200 answer — including DuckDuckGo's rate-limit answers (HTTP 202/403/429 with a challenge
page) — into the same "No results found." error. The model needs to know whether to rephrase or to
wait, so the tool makes the request through the engine's own HTTP client and parser and looks at
the status itself. If a future ddgs changes those internals, it falls back to `DDGS().text()`.
"""
from __future__ import annotations

import os
from typing import Any

from agents.errors import ToolError
from agents.tooling.base import Tool

_TIME_RANGES = {"day": "d", "week": "w", "month": "m", "year": "y"}
_RATE_LIMIT_STATUSES = {202, 403, 418, 429}
_CHALLENGE_MARKERS = ("anomaly-modal", "challenge-form", "anomaly.js")
MAX_RESULTS_CAP = 30


class WebSearchError(ToolError):
    """The search failed (rate limit, timeout, network); the message says what to do."""


class WebSearchTool(Tool):
    """Search the web with DuckDuckGo; returns titles, links and snippets as Markdown."""

    name = "web_search"
    description = (
        "Searches the web with DuckDuckGo and returns the top results as Markdown: title, link and snippet for "
        "each. Use visit_webpage on a link to read the page."
    )
    inputs = {
        "query": {"type": "string", "description": "The search query."},
        "max_results": {"type": "integer",
                        "description": f"How many results to return (1-{MAX_RESULTS_CAP}, default 10).",
                        "nullable": True},
        "region": {"type": "string",
                   "description": "Region code such as 'us-en', 'uk-en', 'de-de', or 'wt-wt' for no region (default).",
                   "nullable": True},
        "time_range": {"type": "string", "description": "Only results from the past day, week, month or year.",
                       "nullable": True, "enum": list(_TIME_RANGES)},
    }
    output_type = "string"
    requires_approval = True  # the query leaves the app
    approval_reason = "sends the query to DuckDuckGo"

    def __init__(self, max_results: int = 10, region: str = "wt-wt", timeout: int = 10,
                 proxy: str | None = None) -> None:
        super().__init__()
        self.default_max_results = max_results
        self.default_region = region
        self.timeout = timeout
        self.proxy = proxy

    def forward(self, query: str, max_results: int | None = None, region: str | None = None,
                time_range: str | None = None) -> str:
        query = query.strip()
        if not query:
            raise ToolError("web_search needs a non-empty query.")
        count = max(1, min(MAX_RESULTS_CAP, max_results or self.default_max_results))
        region = (region or self.default_region).strip().lower()
        timelimit = _TIME_RANGES[time_range] if time_range else None
        results = self._search(query, count, region, timelimit)
        return format_results(query, results[:count], region, time_range)

    # ------------------------------------------------------------------ search
    def _search(self, query: str, count: int, region: str, timelimit: str | None) -> list[dict[str, str]]:
        try:
            from ddgs.engines.duckduckgo import Duckduckgo
        except ImportError:  # pragma: no cover - only if ddgs reorganises its engines
            return self._search_public_api(query, count, region, timelimit)
        proxy = self.proxy or os.environ.get("DDGS_PROXY")
        engine = Duckduckgo(proxy=proxy, timeout=self.timeout)
        if not all(hasattr(engine, a) for a in ("build_payload", "http_client", "extract_results", "search_url")):
            return self._search_public_api(query, count, region, timelimit)  # pragma: no cover
        results: list[dict[str, str]] = []
        seen: set[str] = set()
        for page in range(1, 4):  # DuckDuckGo's HTML endpoint gives 10-15 results a page
            html = self._request_page(engine, query, region, timelimit, page)
            page_results = engine.post_extract_results(engine.extract_results(html)) if html.strip() else []
            if not page_results and any(marker in html for marker in _CHALLENGE_MARKERS):
                raise WebSearchError(_RATE_LIMIT_MESSAGE + " (challenge page)")
            fresh = 0
            for item in page_results:
                href = getattr(item, "href", "")
                if href and href not in seen:
                    seen.add(href)
                    results.append({"title": item.title, "href": href, "body": item.body})
                    fresh += 1
            if len(results) >= count or fresh == 0:
                break
        return results

    def _request_page(self, engine: Any, query: str, region: str, timelimit: str | None, page: int) -> str:
        from ddgs.exceptions import DDGSException, TimeoutException

        payload = engine.build_payload(query=query, region=region, safesearch="moderate", timelimit=timelimit,
                                       page=page)
        try:
            if engine.search_method == "GET":
                response = engine.http_client.request("GET", engine.search_url, params=payload)
            else:
                response = engine.http_client.request(engine.search_method, engine.search_url, data=payload)
        except TimeoutException as exc:
            raise WebSearchError(_timeout_message(self.timeout)) from exc
        except DDGSException as exc:
            if "timed out" in str(exc).lower() or "timeout" in str(exc).lower():
                raise WebSearchError(_timeout_message(self.timeout)) from exc
            raise WebSearchError(f"Web search failed: could not reach DuckDuckGo ({_network_reason(exc)}). "
                                 "Check the network, or try again later.") from exc
        status = response.status_code
        text = response.text or ""
        if status in _RATE_LIMIT_STATUSES:
            raise WebSearchError(_RATE_LIMIT_MESSAGE + f" (HTTP {status})")
        if status != 200:
            raise WebSearchError(f"Web search failed: DuckDuckGo answered HTTP {status}. Try again later, or "
                                 "rephrase the query.")
        return text

    def _search_public_api(self, query: str, count: int, region: str,
                           timelimit: str | None) -> list[dict[str, str]]:  # pragma: no cover - fallback
        from ddgs import DDGS
        from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

        try:
            return DDGS(proxy=self.proxy, timeout=self.timeout).text(
                query, region=region, timelimit=timelimit, max_results=count, backend="duckduckgo")
        except RatelimitException as exc:
            raise WebSearchError(_RATE_LIMIT_MESSAGE) from exc
        except TimeoutException as exc:
            raise WebSearchError(_timeout_message(self.timeout)) from exc
        except DDGSException as exc:
            if "no results" in str(exc).lower():
                return []
            raise WebSearchError(f"Web search failed: {_shorten(str(exc))}. Try again later.") from exc


_RATE_LIMIT_MESSAGE = ("Web search is rate-limited by DuckDuckGo right now. Wait a minute before searching again, "
                       "make fewer searches, or use visit_webpage / wikipedia_search on a source you already know")


def _timeout_message(timeout: int) -> str:
    return (f"Web search timed out after {timeout}s: DuckDuckGo did not answer in time. Try again, "
            "or use a shorter query.")


_NETWORK_REASONS = (
    (("dns", "name resolution", "lookup address", "name or service not known", "nodename nor servname"),
     "this server could not look up its address: it may have no internet access"),
    (("connection refused", "connect error", "connecterror"), "the connection was refused"),
    (("certificate", "tls", "ssl", "handshake"), "the secure connection could not be set up"),
    (("proxy",), "the proxy did not let the request through"),
)


def _network_reason(exc: BaseException) -> str:
    """What went wrong reaching DuckDuckGo, in plain words: the HTTP client's own text (a chain of DNS and socket
    errors with the request's URL) is shown to the person and the model, and helps neither."""
    text = str(exc).lower()
    for markers, reason in _NETWORK_REASONS:
        if any(marker in text for marker in markers):
            return reason
    return "a network error"


def _shorten(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def format_results(query: str, results: list[dict[str, str]], region: str, time_range: str | None) -> str:
    """Results as a numbered Markdown list with a header line stating count, region and time range."""
    scope = f"region {region}" + (f", past {time_range}" if time_range else "")
    if not results:
        return (f"No results found for {query!r} ({scope}). Try fewer or different keywords"
                + (", or a wider time range." if time_range else "."))
    lines = [f"## Search results for {query!r}", f"{len(results)} result(s), {scope}.", ""]
    for number, item in enumerate(results, start=1):
        title = (item.get("title") or item.get("href") or "").replace("[", "(").replace("]", ")")
        lines.append(f"{number}. [{title}]({item.get('href', '')})")
        snippet = (item.get("body") or "").strip()
        if snippet:
            lines.append(f"   {snippet}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
