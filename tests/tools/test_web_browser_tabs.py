"""A click that opens a tab waits for the tab, not a fixed time (no browser: Playwright's page is stood in for).

Why: Playwright announces a new tab some time after click() returns, while the caller's thread waits in a
Playwright call. The tool waited a fixed 250 ms, and on a loaded machine the agent was shown the old page
(tests/tools/test_web_browser.py's new-tab check failed that way). Here the stand-in page announces the tab
only on its tenth wait, as a slow machine would.
"""
from __future__ import annotations

from tools.browser_host import Session
from tools.web_browser import WebBrowserTool


class _Locator:
    def __init__(self, page: _Page) -> None:
        self.page = page

    @property
    def first(self) -> _Locator:
        return self

    def count(self) -> int:
        return 1

    def evaluate(self, script: str) -> bool:
        return self.page.opens_tab

    def click(self) -> None:
        self.page.clicked = True


class _Page:
    """Announces the tab a click opened (the host's page handler) on its `announce_on`-th wait."""

    def __init__(self, session: Session, opens_tab: bool, announce_on: int = 10) -> None:
        self.session, self.opens_tab, self.announce_on = session, opens_tab, announce_on
        self.clicked, self.waits = False, 0

    def locator(self, target: str) -> _Locator:
        return _Locator(self)

    get_by_text = locator

    def wait_for_timeout(self, ms: float) -> None:
        self.waits += 1
        if self.clicked and self.opens_tab and self.waits == self.announce_on:
            self.session.popups += 1
            self.session.page = "the new tab"


class _Fetcher:
    refusals: list[str] = []


def _session(opens_tab: bool) -> tuple[Session, _Page]:
    session = Session(context=None, page=None, fetcher=_Fetcher())  # type: ignore[arg-type]
    page = _Page(session, opens_tab)
    session.page = page
    return session, page


def test_a_click_that_opens_a_tab_waits_until_the_tab_is_announced() -> None:
    session, page = _session(opens_tab=True)
    WebBrowserTool(allow_private=True)._click(session, "#new-tab-link", timeout=5.0)
    assert session.page == "the new tab" and page.waits == 10


def test_a_click_that_opens_no_tab_does_not_wait_for_one() -> None:
    session, page = _session(opens_tab=False)
    WebBrowserTool(allow_private=True)._click(session, "#plain-link", timeout=5.0)
    assert session.page is page and page.waits == 1  # the short look for a script's window.open only


def test_a_tab_that_never_comes_is_waited_for_at_most_the_action_timeout() -> None:
    session, page = _session(opens_tab=True)
    page.announce_on = 10**9
    WebBrowserTool(allow_private=True)._click(session, "#blocked-popup", timeout=0.3)
    assert session.page is page and page.waits >= 1
