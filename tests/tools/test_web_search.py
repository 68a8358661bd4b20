"""web_search with the real ddgs client pointed at a loopback stand-in for DuckDuckGo's HTML endpoint.

Only the engine's URL is changed: ddgs's own HTTP client (primp), payload building and HTML parsing run.
"""
from __future__ import annotations

from urllib.parse import parse_qs

import pytest
from tools_testlib import LocalServer, Reply, Request

from tools.web_search import WebSearchError, WebSearchTool


def _result_html(start: int, count: int) -> str:
    items = "".join(
        f'<div class="result results_links web-result"><div class="links_main links_deep result__body">'
        f'<h2 class="result__title"><a class="result__a" href="https://example.org/{i}">Result [{i}] title</a></h2>'
        f'<a class="result__snippet" href="https://example.org/{i}">Snippet <b>number</b> {i}.</a>'
        f"</div></div>"
        for i in range(start, start + count)
    )
    return f"<html><body><div id='links'>{items}</div></body></html>"


@pytest.fixture
def ddg(local_server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> LocalServer:
    from ddgs.engines.duckduckgo import Duckduckgo

    monkeypatch.setattr(Duckduckgo, "search_url", f"{local_server.base}/html/")

    def search(request: Request) -> Reply:
        form = parse_qs(request.body.decode())
        query = form.get("q", [""])[0]
        if query == "nothing":
            return Reply(200, "<html><body><div class='no-results'>No results.</div></body></html>",
                         {"Content-Type": "text/html"})
        offset = int(form.get("s", ["0"])[0] or 0)
        return Reply(200, _result_html(offset, 15), {"Content-Type": "text/html"})

    local_server.routes["/html/"] = search
    return local_server


def test_results_are_formatted_as_markdown(ddg: LocalServer) -> None:
    out = WebSearchTool()(query="agent frameworks", max_results=3)
    assert out.startswith("## Search results for 'agent frameworks'\n3 result(s), region wt-wt.")
    assert "1. [Result (0) title](https://example.org/0)\n   Snippet number 0." in out
    assert "3. [Result (2) title](https://example.org/2)" in out
    assert "example.org/3" not in out


def test_region_and_time_range_are_sent(ddg: LocalServer) -> None:
    out = WebSearchTool()(query="news", region="de-de", time_range="week", max_results=2)
    assert "region de-de, past week" in out
    form = parse_qs(ddg.requests[0].body.decode())
    assert form["q"] == ["news"] and form["l"] == ["de-de"] and form["df"] == ["w"]


def test_more_results_than_one_page(ddg: LocalServer) -> None:
    out = WebSearchTool()(query="many", max_results=20)
    assert "20 result(s)" in out and "20. [" in out
    assert len(ddg.requests) == 2


def test_no_results(ddg: LocalServer) -> None:
    out = WebSearchTool()(query="nothing", time_range="day")
    assert out.startswith("No results found for 'nothing' (region wt-wt, past day)")


def test_invalid_time_range_is_rejected_before_searching(ddg: LocalServer) -> None:
    from agents.errors import ToolInputError

    with pytest.raises(ToolInputError, match="must be one of"):
        WebSearchTool()(query="x", time_range="decade")
    assert ddg.requests == []


@pytest.mark.parametrize("reply", [
    Reply(202, "<html><body><div class='anomaly-modal'>Unfortunately, bots use DuckDuckGo too.</div></body></html>",
          {"Content-Type": "text/html"}),
    Reply(429, "Too Many Requests", {"Content-Type": "text/plain"}),
    Reply(200, "<html><body><form id='challenge-form'></form></body></html>", {"Content-Type": "text/html"}),
])
def test_rate_limit_becomes_a_clear_message(ddg: LocalServer, reply: Reply) -> None:
    ddg.routes["/html/"] = reply
    with pytest.raises(WebSearchError, match="rate-limited by DuckDuckGo.*Wait a minute"):
        WebSearchTool()(query="anything")


def test_timeout_becomes_a_clear_message(ddg: LocalServer) -> None:
    ddg.routes["/html/"] = Reply(200, _result_html(0, 3), {"Content-Type": "text/html"}, delay=3.0)
    with pytest.raises(WebSearchError, match="timed out after 1s"):
        WebSearchTool(timeout=1)(query="slow")


def test_server_error_and_unreachable(ddg: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    ddg.routes["/html/"] = Reply(500, "oops", {"Content-Type": "text/plain"})
    with pytest.raises(WebSearchError, match="HTTP 500"):
        WebSearchTool()(query="x")
    from ddgs.engines.duckduckgo import Duckduckgo

    monkeypatch.setattr(Duckduckgo, "search_url", "http://127.0.0.1:9/html/")
    with pytest.raises(WebSearchError, match="could not reach DuckDuckGo|timed out"):
        WebSearchTool(timeout=2)(query="x")


def test_an_unreachable_network_is_said_plainly(ddg: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 31: a failed search showed the HTTP client's raw DNS error chain (with the request's URL)."""
    from ddgs.engines.duckduckgo import Duckduckgo
    from ddgs.exceptions import DDGSException

    raw = ("error sending request for url (https://html.duckduckgo.com/html/): client error (Connect): "
           "dns error: failed to lookup address information: Temporary failure in name resolution")

    def unreachable(*args: object, **kwargs: object) -> None:
        raise DDGSException(raw)

    engine = Duckduckgo(timeout=2)
    monkeypatch.setattr(type(engine.http_client), "request", unreachable)
    with pytest.raises(WebSearchError) as caught:
        WebSearchTool(timeout=2)(query="x")
    message = str(caught.value)
    assert "could not look up its address" in message and "no internet access" in message
    assert "dns error" not in message and "duckduckgo.com/html" not in message
