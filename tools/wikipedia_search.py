"""wikipedia_search: find a Wikipedia article and return its summary or full text as Markdown.

Why: Wikipedia is the most common reference an agent needs, and its public APIs give clean text
(no HTML scraping): the action API's full-text search finds the best-matching title, the REST
summary endpoint gives the lead section, and the TextExtracts module (`prop=extracts`,
`explaintext`) gives the whole article as plain text with `== Section ==` headings, which are
turned into Markdown headings. Wikimedia asks API clients to send a descriptive User-Agent
(AGENTDECK_USER_AGENT). The base URL is configurable (`base_url` / AGENTDECK_WIKIPEDIA_URL, where
`{lang}` is replaced by the language code) so tests and mirrors can stand in for wikipedia.org.
"""
from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import quote

from agents.errors import ToolError
from agents.tooling.base import Tool
from tools._common import truncate, user_agent

WIKIPEDIA_URL_ENV = "AGENTDECK_WIKIPEDIA_URL"
DEFAULT_BASE_URL = "https://{lang}.wikipedia.org"
_LANGUAGE = re.compile(r"^[a-z]{2,3}(-[a-z0-9]{2,8})*$|^simple$")
_HEADING = re.compile(r"^(={2,6})\s*(.*?)\s*\1\s*$", re.MULTILINE)


class WikipediaSearchTool(Tool):
    """Search Wikipedia and return an article's summary or full text as Markdown."""

    name = "wikipedia_search"
    description = (
        "Searches Wikipedia and returns the best-matching article as Markdown: its summary (default) or the full "
        "article text, with the article URL and other matching titles."
    )
    inputs = {
        "query": {"type": "string", "description": "What to look up: an article title or search keywords."},
        "mode": {"type": "string",
                 "description": "'summary' (the lead section, default) or 'full' (the whole article).",
                 "nullable": True, "enum": ["summary", "full"]},
        "language": {"type": "string",
                     "description": "Wikipedia language code such as 'en', 'de', 'fr' (default 'en').",
                     "nullable": True},
    }
    output_type = "string"
    requires_approval = True  # the query leaves the app
    approval_reason = "sends the query to Wikipedia"

    def __init__(self, base_url: str | None = None, language: str = "en", max_chars: int = 40_000,
                 timeout: float = 15.0, user_agent_header: str | None = None) -> None:
        super().__init__()
        self.base_url = (base_url or os.environ.get(WIKIPEDIA_URL_ENV, "").strip() or DEFAULT_BASE_URL).rstrip("/")
        self.default_language = language
        self.max_chars = max_chars
        self.timeout = timeout
        self.user_agent_header = user_agent_header

    def forward(self, query: str, mode: str | None = None, language: str | None = None) -> str:
        query = query.strip()
        if not query:
            raise ToolError("wikipedia_search needs a non-empty query.")
        lang = (language or self.default_language).strip().lower()
        if not _LANGUAGE.match(lang):
            raise ToolError(f"{language!r} is not a Wikipedia language code; use codes like 'en', 'de', 'fr', 'zh'.")
        base = self.base_url.replace("{lang}", lang)
        titles = self._search(base, query)
        if not titles:
            raise ToolError(f"No Wikipedia article matches {query!r} on the {lang!r} Wikipedia. Try other or fewer "
                            "keywords, the exact article title, or another language.")
        title, others = titles[0], titles[1:]
        if mode == "full":
            text = self._full(base, title, lang)
        else:
            text = self._summary(base, title, others)
        if others:
            text += "\n\nOther matching articles: " + "; ".join(others)
        return text

    # ------------------------------------------------------------------ API calls
    def _get(self, url: str, params: dict[str, Any] | None = None, not_found_ok: bool = False) -> Any:
        import requests

        headers = {"User-Agent": self.user_agent_header or user_agent(), "Accept": "application/json"}
        try:
            response = requests.get(url, params=params, headers=headers, timeout=self.timeout)
        except requests.exceptions.RequestException as exc:
            if isinstance(exc, requests.exceptions.Timeout) or "timed out" in str(exc).lower():
                # a read timeout while the body streams in surfaces as ConnectionError in requests
                raise ToolError(f"Wikipedia did not answer within {self.timeout:g}s; try again later.") from exc
            raise ToolError(f"Could not reach Wikipedia ({type(exc).__name__}); check the network or try again "
                            "later.") from exc
        if response.status_code == 404 and not_found_ok:
            return None
        if response.status_code == 429:
            raise ToolError("Wikipedia is rate-limiting these requests; wait a minute before trying again.")
        if response.status_code >= 400:
            raise ToolError(f"Wikipedia answered HTTP {response.status_code} for {response.url}; try again later.")
        try:
            return response.json()
        except ValueError as exc:
            raise ToolError(f"Wikipedia sent something that is not JSON from {response.url}.") from exc

    def _search(self, base: str, query: str) -> list[str]:
        data = self._get(f"{base}/w/api.php", {
            "action": "query", "list": "search", "srsearch": query, "srlimit": 5, "format": "json",
            "formatversion": 2, "utf8": 1,
        })
        _raise_api_error(data)
        hits = (data.get("query") or {}).get("search") or []
        return [hit["title"] for hit in hits if hit.get("title")]

    def _summary(self, base: str, title: str, others: list[str]) -> str:
        data = self._get(f"{base}/api/rest_v1/page/summary/{_title_path(title)}", {"redirect": "true"},
                         not_found_ok=True)
        if not data:
            raise ToolError(f"Wikipedia lists {title!r} but its summary could not be found; try mode='full'.")
        lines = [f"# {data.get('title') or title}"]
        if data.get("description"):
            lines.append(f"*{data['description']}*")
        page_url = ((data.get("content_urls") or {}).get("desktop") or {}).get("page")
        if page_url:
            lines.append(f"URL: {page_url}")
        extract = (data.get("extract") or "").strip() or "(This article has no summary text.)"
        lines.append("")
        lines.append(extract)
        if data.get("type") == "disambiguation":
            lines.append("\nThis is a disambiguation page: search again with a more specific query"
                         + (" (see the other matching articles below)." if others else "."))
        return "\n".join(lines)

    def _full(self, base: str, title: str, lang: str) -> str:
        data = self._get(f"{base}/w/api.php", {
            "action": "query", "prop": "extracts|info", "explaintext": 1, "exsectionformat": "wiki",
            "inprop": "url", "redirects": 1, "titles": title, "format": "json", "formatversion": 2,
        })
        _raise_api_error(data)
        pages = (data.get("query") or {}).get("pages") or []
        page = pages[0] if pages else {}
        if not page or page.get("missing"):
            raise ToolError(f"The Wikipedia article {title!r} could not be loaded; try another title.")
        extract = (page.get("extract") or "").strip()
        body = _HEADING.sub(lambda m: "#" * len(m.group(1)) + " " + m.group(2), extract)
        body = re.sub(r"\n{3,}", "\n\n", body)
        url = page.get("fullurl") or f"https://{lang}.wikipedia.org/wiki/{_title_path(title)}"
        text = f"# {page.get('title') or title}\nURL: {url}\n\n{body or '(This article has no text.)'}"
        return truncate(text, self.max_chars, "Ask for mode='summary' or a more specific article.")


def _title_path(title: str) -> str:
    return quote(title.replace(" ", "_"), safe="")


def _raise_api_error(data: Any) -> None:
    if isinstance(data, dict) and data.get("error"):
        error = data["error"]
        info = error.get("info") or error.get("code") or "unknown error"
        raise ToolError(f"Wikipedia API error: {info}.")
