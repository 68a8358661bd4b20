"""Driving the app in Debian's Chromium with Playwright: shared by the browser test files.

Never a downloaded browser: Playwright launches /usr/bin/chromium (installed by `make test` with apt-get).
"""
from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

#: The marks every browser test file applies (`pytestmark = BROWSER_MARKS`).
BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM),
                       reason="Debian's Chromium is not installed at /usr/bin/chromium (apt-get install -y chromium)"),
]


def launch(playwright):
    """Debian's Chromium, headless, with nothing reaching for the network."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


@contextmanager
def open_page(url: str) -> Iterator:
    """A 1440x1000 page on the app in a fresh headless Chromium, closed afterwards."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": 1440, "height": 1000}, device_scale_factor=1)
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.goto(url)
        page.wait_for_selector("#chat")
        try:
            yield page
        finally:
            context.close()
            browser.close()


def chat_text(page, where: str = "#chat") -> str:
    return page.locator(where).inner_text()


def wait_for_text(page, needle: str, timeout: float = 30.0, where: str = "#chat") -> None:
    deadline = time.time() + timeout
    while needle not in chat_text(page, where):
        if time.time() > deadline:
            raise AssertionError(f"{needle!r} never appeared in {where}:\n{chat_text(page, where)[-2000:]}")
        time.sleep(0.1)


def send(page, text: str, files: list[Path] = (), timeout_ms: int = 40_000) -> None:
    """Type a message (with files) into the task box once it is enabled, and press Enter."""
    box = page.locator("#task-input textarea")
    box.wait_for(state="visible")
    page.wait_for_function("!document.querySelector('#task-input textarea').disabled", timeout=timeout_ms)
    box.fill(text)
    if files:
        page.locator("#task-input input[type=file]").set_input_files([str(f) for f in files])
        page.wait_for_function(
            "n => document.querySelectorAll('#task-input .thumbnail-item, #task-input .thumbnail-image, "
            "#task-input [class*=thumbnail]').length >= n", arg=len(files), timeout=15_000)
    box.press("Enter")


def panel_links(page, wait_for: str | None = None, timeout: float = 15.0) -> list[str]:
    """The download links of the files panel (names are shortened on screen, hrefs are whole)."""
    deadline = time.time() + timeout
    while True:
        links = [a.get_attribute("href") or "" for a in page.locator("#files-panel a").all()]
        if wait_for is None or any(wait_for in href for href in links) or time.time() > deadline:
            return links
        time.sleep(0.2)


def wait_in_view(page, locator) -> None:
    """Wait until the element is inside the chat's scrolled view, once folding steps have finished moving (the
    chat follows the output as the run streams)."""
    locator.wait_for()
    locator.evaluate("""el => new Promise((resolve, reject) => {
        const log = document.querySelector('#chat [role=log]'), deadline = Date.now() + 15000;
        const moving = () => document.getAnimations().some(a => a.playState === 'running'
                                                                 && a.effect.getComputedTiming().endTime !== Infinity);
        const check = () => {
            const box = el.getBoundingClientRect(), view = log.getBoundingClientRect();
            if (!moving() && box.height > 0 && box.top >= view.top && box.bottom <= view.bottom) return resolve(true);
            if (Date.now() > deadline) return reject(new Error('not in the chat view: ' + el.innerText));
            requestAnimationFrame(check);
        };
        check();
    })""")


def scroll_chat_to(page, locator, timeout: float = 15.0) -> None:
    """Scroll the chat (not the page) so that `locator` is at its top, again whenever a late update of the
    finished run scrolls it back down (Gradio follows new values), until it has stayed there for a second."""
    deadline, steady_since = time.time() + timeout, None
    while time.time() < deadline:
        moved = locator.evaluate("""el => {
            const log = document.querySelector('#chat [role=log]');
            const off = el.getBoundingClientRect().top - log.getBoundingClientRect().top;
            const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 1;
            if (Math.abs(off) <= 2 || (off > 0 && atEnd)) return false;
            log.scrollTop += off;
            return true;
        }""")
        if moved:
            steady_since = None
        elif steady_since is None:
            steady_since = time.time()
        elif time.time() - steady_since >= 1.0:
            return
        time.sleep(0.1)
    raise AssertionError("the chat kept scrolling away")
