"""web_browser in Debian's Chromium against loopback pages: actions, screenshots, address rules, sessions."""
from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from tools_testlib import LocalServer, Reply

from agents.errors import ToolError
from agents.models.images import TextAndImage
from agents.tooling.context import ToolContext
from tools import visit_webpage as vw
from tools.browser_host import CHROMIUM, BrowserHost, BrowserLimits
from tools.web_browser import WebBrowserTool

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's Chromium is not at /usr/bin/chromium"),
]

HTML = {"Content-Type": "text/html; charset=utf-8"}
HOME = """<html><head><title>Home page</title></head><body><h1>Welcome home</h1>
<p>The quick brown fox jumps over the lazy dog.</p>
<a href="/second">Go to the second page</a> <a href="/second" target="_blank">In a new tab</a>
<a id="secret" href="file:///etc/passwd">Local file</a>
<form action="/search" method="get"><input id="q" name="q"></form>
<div style="height: 3000px"></div><p>Far below: the treasure.</p>
</body></html>"""
SECOND = "<html><head><title>Second page</title></head><body><p>You reached the second page.</p></body></html>"
COOKIE_PAGE = "<html><head><title>Cookies</title></head><body><script>document.write('seen:' + document.cookie)" \
              "</script></body></html>"


@dataclass
class _Run:
    """The parts of a run a tool sees; `broker` stands for the agent (one per session)."""
    run_id: str = "run-1"
    step: int = 1
    parent_id: str | None = None
    broker: Any = field(default_factory=lambda: type("Broker", (), {})())

    def emit(self, event: Any) -> None:
        pass

    def check_interrupt(self) -> None:
        pass

    def ask(self, *args: Any, **kwargs: Any) -> None:
        return None


def _context(run: _Run | None = None) -> ToolContext:
    return ToolContext(call_id="call-1", run=run or _Run())  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def host() -> Iterator[BrowserHost]:
    browser = BrowserHost(BrowserLimits(timeout=5.0))
    yield browser
    browser.close()


@pytest.fixture
def server(local_server: LocalServer) -> LocalServer:
    def search(request: Any) -> Reply:
        query = request.query.get("q", [""])[0]
        return Reply(200, f"<html><head><title>Results</title></head><body>You searched for {query}</body></html>",
                     HTML)

    def cookies(request: Any) -> Reply:
        return Reply(200, COOKIE_PAGE, HTML)

    local_server.routes.update({
        "/": Reply(200, HOME, HTML),
        "/second": Reply(200, SECOND, HTML),
        "/search": search,
        "/set-cookie": Reply(200, "<html><title>Set</title><body>set</body></html>",
                             {**HTML, "Set-Cookie": "token=alice; Path=/"}),
        "/cookies": cookies,
        "/moved": Reply(302, b"", {"Location": "/second"}),
        "/to-loopback": Reply(302, b"", {"Location": f"http://127.0.0.1:{local_server.port}/second"}),
    })
    return local_server


def test_open_click_type_find_scroll_and_back(server: LocalServer, host: BrowserHost) -> None:
    tool = WebBrowserTool(allow_private=True, host=host)
    context = _context()
    opened = tool.invoke({"action": "open", "url": f"{server.base}/"}, context)
    assert isinstance(opened, TextAndImage)
    assert "Title: Home page" in opened.text and "Welcome home" in opened.text
    assert opened.image.mime == "image/jpeg" and (opened.image.width, opened.image.height) == (1024, 768)

    clicked = tool.invoke({"action": "click", "target": "Go to the second page"}, context)
    assert "Title: Second page" in clicked.text and f"URL: {server.base}/second" in clicked.text

    moved = tool.invoke({"action": "open", "url": f"{server.base}/moved"}, context)
    assert "Title: Second page" in moved.text and f"URL: {server.base}/second" in moved.text
    tool.invoke({"action": "back"}, context)
    back = tool.invoke({"action": "back"}, context)
    assert "Title: Home page" in back.text

    found = tool.invoke({"action": "find", "text": "treasure"}, context)
    assert "'treasure' found 1 time(s)" in found.text and "Far below: the treasure" in found.text
    assert "'unicorn' is not on this page" in tool.invoke({"action": "find", "text": "unicorn"}, context).text
    scrolled = tool.invoke({"action": "scroll", "target": "up"}, context)
    assert scrolled.image.data != found.image.data  # the view moved back up from the treasure

    typed = tool.invoke({"action": "type", "target": "#q", "text": "otters", "submit": True}, context)
    assert "Title: Results" in typed.text and "You searched for otters" in typed.text
    assert server.requests[-1].path == "/search" and server.requests[-1].query == {"q": ["otters"]}

    tool.invoke({"action": "open", "url": f"{server.base}/"}, context)
    popup = tool.invoke({"action": "click", "target": "In a new tab"}, context)
    assert "Title: Second page" in popup.text  # the tab a click opened is the one the agent sees


def test_a_link_to_a_local_file_is_not_followed(server: LocalServer, host: BrowserHost) -> None:
    tool = WebBrowserTool(allow_private=True, host=host)
    context = _context()
    tool.invoke({"action": "open", "url": f"{server.base}/"}, context)
    after = tool.invoke({"action": "click", "target": "#secret"}, context)
    assert "root:" not in after.text and "URL: file:" not in after.text
    with pytest.raises(ToolError, match="only http:// and https://"):
        tool.invoke({"action": "open", "url": "file:///etc/passwd"}, context)
    with pytest.raises(ToolError, match="only http:// and https://"):
        tool.invoke({"action": "open", "url": "chrome://version"}, context)


def test_private_addresses_are_refused_by_default(server: LocalServer, host: BrowserHost) -> None:
    tool = WebBrowserTool(host=host)
    assert tool.allow_private is False
    with pytest.raises(ToolError, match="non-public"):
        tool.invoke({"action": "open", "url": f"{server.base}/second"}, _context())
    assert server.requests == []


def test_a_redirect_to_a_private_address_is_refused(server: LocalServer, host: BrowserHost,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # "localhost" looks public (resolver patched, connect-time check off); its redirect goes to 127.0.0.1.
    real = vw._resolve_host
    monkeypatch.setattr(vw, "_resolve_host",
                        lambda h, port: ["93.184.216.34"] if h == "localhost" else real(h, port))
    monkeypatch.setattr(vw, "_verify_peer", lambda h, sock: None)
    tool = WebBrowserTool(allow_private=False, host=host)
    with pytest.raises(ToolError, match=r"127\.0\.0\.1.*non-public"):
        tool.invoke({"action": "open", "url": f"http://localhost:{server.port}/to-loopback"}, _context())
    assert [r.path for r in server.requests] == ["/to-loopback"]


def test_dns_rebinding_is_caught_at_connect(server: LocalServer, host: BrowserHost,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    real = vw._resolve_host
    monkeypatch.setattr(vw, "_resolve_host",
                        lambda h, port: ["93.184.216.34"] if h == "localhost" else real(h, port))
    tool = WebBrowserTool(allow_private=False, host=host)
    with pytest.raises(ToolError, match=r"127\.0\.0\.1"):
        tool.invoke({"action": "open", "url": f"http://localhost:{server.port}/second"}, _context())
    assert server.requests == []


def test_sessions_do_not_share_cookies(server: LocalServer, host: BrowserHost) -> None:
    tool = WebBrowserTool(allow_private=True, host=host)
    alice, bob = _context(_Run()), _context(_Run())
    tool.invoke({"action": "open", "url": f"{server.base}/set-cookie"}, alice)
    assert "seen:token=alice" in tool.invoke({"action": "open", "url": f"{server.base}/cookies"}, alice).text
    assert server.requests[-1].headers.get("cookie") == "token=alice"  # the browser sends its own cookies
    seen = tool.invoke({"action": "open", "url": f"{server.base}/cookies"}, bob).text
    assert "seen:" in seen and "token=alice" not in seen
    assert server.requests[-1].headers.get("cookie") is None


def test_registered_as_a_built_in_that_needs_approval() -> None:
    from tools.registry import BUILTIN_TOOL_NAMES, make_builtin_tools

    assert "web_browser" in BUILTIN_TOOL_NAMES
    browser = make_builtin_tools({"allow_private_urls": False})["web_browser"]
    assert isinstance(browser, WebBrowserTool) and browser.requires_approval and browser.allow_private is False
    import tools

    assert tools.WebBrowserTool is WebBrowserTool


def test_a_tool_calling_agent_sees_the_screenshot(server: LocalServer, host: BrowserHost) -> None:
    from agents.loop.tool_calling_agent import ToolCallingAgent
    from agents.models.images import image_parts
    from agents.models.replay import ReplayModel

    model = ReplayModel([
        {"content": "", "tool_calls": [{"name": "web_browser",
                                        "arguments": {"action": "open", "url": f"{server.base}/second"}}]},
        {"content": "", "tool_calls": [{"name": "final_answer", "arguments": {"answer": "done"}}]},
    ])
    agent = ToolCallingAgent(model=model, tools=[WebBrowserTool(allow_private=True, host=host)], verbosity=0)
    assert agent.run("Open the page.") == "done"
    observation = model.calls[1][-1]
    text = observation["content"][0]["text"]
    assert "Title: Second page" in text and "1024 x 768 pixels (attached)" in text
    assert len(image_parts(observation)) == 1


def test_a_code_agent_gets_the_text_and_the_model_the_screenshot(server: LocalServer, host: BrowserHost,
                                                                 tmp_path: Any) -> None:
    from agents.loop.code_agent import CodeAgent
    from agents.models.images import image_parts
    from agents.models.replay import ReplayModel

    code = (f"page = web_browser(action='open', url='{server.base}/second')\n"
            "print(type(page).__name__, page.splitlines()[0])")
    model = ReplayModel([f"```python\n{code}\n```", "```python\nfinal_answer('done')\n```"])
    agent = CodeAgent(model=model, tools=[WebBrowserTool(allow_private=True, host=host)], workdir=tmp_path / "w",
                      verbosity=0)
    try:
        assert agent.run("Open the page.") == "done"
    finally:
        agent.close()
    observation = model.calls[1][-1]
    assert "str Title: Second page" in observation["content"][0]["text"]
    assert len(image_parts(observation)) == 1 and "image/jpeg" in image_parts(observation)[0]["image_url"]["url"]
    # The screenshot is also saved in the workspace, as the chat shows a chart: once, by the step that took it.
    saved = [step.artifacts for step in agent.memory.steps if hasattr(step, "artifacts")]
    assert len(saved) == 2 and len(saved[0]) == 1 and saved[1] == []
    assert saved[0][0].startswith("tool-image-") and (tmp_path / "w" / saved[0][0]).read_bytes()[:2] == b"\xff\xd8"




POPUPS = """<html><head><title>Tabs</title></head><body>
<a href="/slow-second" target="_blank">A link in a new tab</a>
<form action="/slow-search" target="results"><input name="q" value="otters"><button>Search in a new tab</button></form>
</body></html>"""


def test_a_tab_a_links_or_a_forms_target_opens_is_the_page_the_agent_sees(server: LocalServer,
                                                                          host: BrowserHost) -> None:
    server.routes["/tabs"] = Reply(200, POPUPS, HTML)
    server.routes["/slow-second"] = Reply(200, SECOND, HTML, delay=0.5)
    server.routes["/slow-search"] = lambda request: Reply(
        200, f"<html><head><title>Results</title></head><body>You searched for {request.query['q'][0]}</body></html>",
        HTML, delay=0.5)
    tool = WebBrowserTool(allow_private=True, host=host)
    context = _context(_Run(run_id="tabs"))
    tool.invoke({"action": "open", "url": f"{server.base}/tabs"}, context)
    linked = tool.invoke({"action": "click", "target": "A link in a new tab"}, context)
    assert "Title: Second page" in linked.text and f"URL: {server.base}/slow-second" in linked.text
    tool.invoke({"action": "open", "url": f"{server.base}/tabs"}, context)
    searched = tool.invoke({"action": "click", "target": "Search in a new tab"}, context)
    assert "Title: Results" in searched.text and "You searched for otters" in searched.text
    tool.close_session(context)
