"""wikipedia_search against a loopback stand-in for Wikipedia's action API and REST summary endpoint."""
from __future__ import annotations

import json
from urllib.parse import unquote

import pytest
from tools_testlib import LocalServer, Reply, Request

from agents.errors import ToolError
from tools.wikipedia_search import WikipediaSearchTool

ARTICLES = {
    ("en", "Ada Lovelace"): {
        "description": "English mathematician (1815–1852)",
        "summary": "Augusta Ada King, Countess of Lovelace, was an English mathematician.",
        "full": "Ada Lovelace was an English mathematician.\n\n\n== Early life ==\nBorn in London.\n\n"
                "=== Childhood ===\nOften ill.\n\n== Legacy ==\nAda is a programming language.",
    },
    ("en", "Mercury"): {"description": "Topics referred to by the same term", "summary": "Mercury may refer to:",
                        "full": "Mercury may refer to: a planet, an element.", "type": "disambiguation"},
    ("de", "Ada Lovelace"): {"description": "britische Mathematikerin",
                             "summary": "Ada Lovelace war eine britische Mathematikerin.",
                             "full": "Ada Lovelace war eine Mathematikerin.\n\n== Leben ==\nLondon."},
}
SEARCH = {"ada": ["Ada Lovelace", "Ada (programming language)"], "mercury": ["Mercury", "Mercury (planet)"]}


def _json(data: object, status: int = 200) -> Reply:
    return Reply(status, json.dumps(data), {"Content-Type": "application/json; charset=utf-8"})


def _wikipedia(request: Request) -> Reply:
    lang, _, rest = request.path.lstrip("/").partition("/")
    if "agentdeck" not in request.headers.get("user-agent", "").lower():
        return _json({"error": "no user agent"}, 403)
    if rest == "w/api.php":
        q = {k: v[0] for k, v in request.query.items()}
        if q.get("list") == "search":
            if q["srsearch"] == "boom":
                return _json({"error": {"code": "internal", "info": "Search is temporarily unavailable"}})
            titles = SEARCH.get(q["srsearch"].split()[0].lower(), [])
            return _json({"batchcomplete": True, "query": {"search": [{"ns": 0, "title": t} for t in titles]}})
        if q.get("prop") == "extracts|info":
            article = ARTICLES.get((lang, q["titles"]))
            if article is None:
                return _json({"query": {"pages": [{"title": q["titles"], "missing": True}]}})
            return _json({"query": {"pages": [{"title": q["titles"], "extract": article["full"],
                                               "fullurl": f"https://{lang}.wikipedia.org/wiki/x"}]}})
    prefix = "api/rest_v1/page/summary/"
    if rest.startswith(prefix):
        title = unquote(rest[len(prefix):]).replace("_", " ")
        article = ARTICLES.get((lang, title))
        if article is None:
            return _json({"title": "Not found."}, 404)
        return _json({"type": article.get("type", "standard"), "title": title, "description": article["description"],
                      "extract": article["summary"],
                      "content_urls": {"desktop": {"page": f"https://{lang}.wikipedia.org/wiki/{rest[len(prefix):]}"}}})
    return _json({"error": "unknown route"}, 404)


@pytest.fixture
def wiki(local_server: LocalServer) -> WikipediaSearchTool:
    local_server.fallback = _wikipedia
    return WikipediaSearchTool(base_url=f"{local_server.base}/{{lang}}", timeout=2)


def test_summary(wiki: WikipediaSearchTool) -> None:
    out = wiki(query="Ada")
    assert out.startswith("# Ada Lovelace\n*English mathematician (1815–1852)*\nURL: https://en.wikipedia.org/wiki/Ada_Lovelace")
    assert "Countess of Lovelace" in out
    assert out.endswith("Other matching articles: Ada (programming language)")


def test_full_article_with_markdown_headings(wiki: WikipediaSearchTool) -> None:
    out = wiki(query="Ada", mode="full")
    assert "## Early life\nBorn in London." in out and "### Childhood" in out and "## Legacy" in out
    assert "\n\n\n" not in out


def test_language_is_selectable(wiki: WikipediaSearchTool) -> None:
    out = wiki(query="Ada", language="de")
    assert "britische Mathematikerin" in out and "de.wikipedia.org" in out
    with pytest.raises(ToolError, match="not a Wikipedia language code"):
        wiki(query="Ada", language="../../etc")


def test_disambiguation_page(wiki: WikipediaSearchTool) -> None:
    out = wiki(query="Mercury")
    assert "disambiguation page" in out and "Mercury (planet)" in out


def test_not_found_and_api_errors(wiki: WikipediaSearchTool) -> None:
    with pytest.raises(ToolError, match="No Wikipedia article matches 'zzxq'"):
        wiki(query="zzxq")
    with pytest.raises(ToolError, match="Search is temporarily unavailable"):
        wiki(query="boom")


def test_full_article_truncated(local_server: LocalServer) -> None:
    local_server.fallback = _wikipedia
    tool = WikipediaSearchTool(base_url=f"{local_server.base}/{{lang}}", max_chars=60)
    assert "[... truncated: showing the first 60 of" in tool(query="Ada", mode="full")


def test_base_url_from_env_and_rate_limit(local_server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    local_server.fallback = lambda request: Reply(429, "slow down", {"Content-Type": "text/plain"})
    monkeypatch.setenv("AGENTDECK_WIKIPEDIA_URL", local_server.base + "/{lang}")
    tool = WikipediaSearchTool()
    assert tool.base_url == local_server.base + "/{lang}"
    with pytest.raises(ToolError, match="rate-limiting"):
        tool(query="Ada")
    assert local_server.requests[0].path == "/en/w/api.php"


def test_timeout(local_server: LocalServer) -> None:
    local_server.fallback = lambda request: Reply(200, "{}", {"Content-Type": "application/json"}, delay=3)
    with pytest.raises(ToolError, match=r"did not answer within 0\.2s"):
        WikipediaSearchTool(base_url=local_server.base, timeout=0.2)(query="Ada")
