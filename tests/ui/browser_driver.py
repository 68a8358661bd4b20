"""Driving the app in Debian's Chromium with Playwright: shared by the browser test files.

Never a downloaded browser: Playwright launches /usr/bin/chromium (installed by `make test` with apt-get).
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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


#: Counts the page's server events: each POST to Gradio's queue (`window.adJoined`) and each event the queue's
#: stream reports finished (`window.adCompleted`), so a test can wait for the events an action started to end;
#: and which handler each finished event ran (`window.adFinished(fn_index)`, how many of that handler's events
#: finished: `wait_for_handler`).
EVENT_COUNTER_JS = """
(() => {
  window.adJoined = 0;
  window.adCompleted = 0;
  const handlerOf = {};  // event id -> the handler's fn_index (from the join's request and answer)
  const finished = [];  // ids of the events finished
  window.adFinished = (fn) => finished.filter(id => handlerOf[id] === fn).length;
  const original = window.fetch;
  window.fetch = async (...args) => {
    const response = await original(...args);
    const url = String((args[0] && args[0].url) || args[0]);
    if (url.includes('/queue/join')) {
      window.adJoined += 1;
      try {
        const fn = JSON.parse(args[1].body).fn_index;
        response.clone().json().then(answer => { handlerOf[answer.event_id] = fn; }).catch(() => {});
      } catch (error) {}  // not a join this page's Gradio client made
    }
    if (!url.includes('/queue/data') || !response.body) return response;
    const [mine, theirs] = response.body.tee();
    (async () => {  // a stream Gradio aborts rejects this copy's read: caught below, it has no events left
      const reader = mine.getReader();
      const decoder = new TextDecoder();
      let pending = '';
      for (;;) {
        const {done, value} = await reader.read();
        if (done) break;
        pending += decoder.decode(value, {stream: true});
        let end;
        while ((end = pending.indexOf('\\n\\n')) >= 0) {
          const message = pending.slice(0, end);
          if (message.includes('"process_completed"')) {
            window.adCompleted += 1;
            try { finished.push(JSON.parse(message.slice(message.indexOf('{'))).event_id); } catch (error) {}
          }
          pending = pending.slice(end + 2);
        }
      }
    })().catch(() => {});
    return new Response(theirs, {status: response.status, statusText: response.statusText,
                                 headers: response.headers});
  };
})();
"""


#: Every toast the page shows, kept once it fades (`window.adToasts`: their elements, read when asked): add it to a
#: context (`context.add_init_script`) before its pages open, then `wait_for_toast`.
TOAST_LOG_JS = """
window.adToasts = [];
new MutationObserver(() => {
  for (const toast of document.querySelectorAll('.toast-body')) {
    if (!window.adToasts.includes(toast)) window.adToasts.push(toast);
  }
}).observe(document, {childList: true, subtree: true});
"""


def toasts(page) -> list[str]:
    """The texts of the toasts the page has shown so far (TOAST_LOG_JS)."""
    return page.evaluate("window.adToasts.map(t => t.textContent)")


def wait_for_toast(page, part: str, timeout: float = 15.0) -> None:
    """Wait until the page has shown a toast containing `part` (TOAST_LOG_JS), even one gone since."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function("part => window.adToasts.some(t => t.textContent.includes(part))", arg=part,
                               timeout=timeout * 1000)
    except PlaywrightTimeout:
        raise AssertionError(f"no toast saying {part!r}; the page's toasts: {toasts(page)}") from None


def launch(playwright):
    """Debian's Chromium, headless, with nothing reaching for the network."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


@contextmanager
def browser_context(playwright, width: int = 1440, height: int = 900) -> Iterator:
    """Chromium with one context of `width` x `height` whose pages count the server's events (EVENT_COUNTER_JS):
    the tabs of a test that opens several on one app (`open_tab`); closed with the browser."""
    browser = launch(playwright)
    context = browser.new_context(viewport={"width": width, "height": height})
    context.add_init_script(EVENT_COUNTER_JS)
    try:
        yield context
    finally:
        context.close()
        browser.close()



@contextmanager
def app_with_tabs(tmp_path: Path, script: list[str]) -> Iterator[tuple[str, Any]]:
    """The app on a replay of `script` and a browser context whose tabs record their toasts (TOAST_LOG_JS):
    (url, context), for the tests of several tabs on one app."""
    from ui_testlib import run_app, write_transcript  # the app's side; this module is the browser's

    sync_api = pytest.importorskip("playwright.sync_api")
    transcript = write_transcript(tmp_path / "script.json", script)
    (tmp_path / "data").mkdir()
    with run_app(transcript, tmp_path / "data") as url, sync_api.sync_playwright() as playwright, \
            browser_context(playwright) as context:
        context.add_init_script(TOAST_LOG_JS)
        yield url, context

def open_tab(context, url: str):
    """A new tab of `context` on the app, once the page has its browser identity (its saved chats are its own)."""
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(url)
    page.wait_for_selector("#chat")
    page.wait_for_function("Object.keys(localStorage).includes('agentdeck-browser')")
    return page


@contextmanager
def open_page(url: str) -> Iterator:
    """A 1440x1000 page on the app in a fresh headless Chromium, closed afterwards."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": 1440, "height": 1000}, device_scale_factor=1)
        context.add_init_script(EVENT_COUNTER_JS)
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
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function("([where, needle]) => (document.querySelector(where)?.innerText || '').includes(needle)",
                               arg=[where, needle], timeout=timeout * 1000)
    except PlaywrightTimeout:
        raise AssertionError(f"{needle!r} never appeared in {where}:\n{chat_text(page, where)[-2000:]}") from None


def server_events(page) -> int:
    """How many server events the page has started so far (see EVENT_COUNTER_JS)."""
    return page.evaluate("window.adJoined")


def wait_for_events(page, since: int, count: int, timeout: float = 30.0) -> None:
    """Wait until `count` more server events than `since` were started and every event started has ended: the
    handlers (and the events chained after them) an action set off have all run."""
    page.wait_for_function("([since, count]) => window.adJoined >= since + count "
                           "&& window.adCompleted >= window.adJoined", arg=[since, count], timeout=timeout * 1000)


def handler_index(page, api_name: str) -> int:
    """The fn_index of the page's handler named `api_name` (as the page's Gradio config lists it)."""
    return page.evaluate("name => window.gradio_config.dependencies.find(d => d.api_name === name).id", api_name)


def wait_for_handler(page, fn_index: int, since: int, timeout: float = 30.0) -> None:
    """Wait until more than `since` events of the handler `fn_index` have finished (EVENT_COUNTER_JS)."""
    page.wait_for_function("([fn, since]) => window.adFinished(fn) > since", arg=[fn_index, since],
                           timeout=timeout * 1000)


def choose_mode(page, label: str, timeout: float = 30.0) -> None:
    """Choose an approval mode in the selector, and wait until the choice has reached the server: its own event
    (`set_approval_mode`) has finished. Why not any one event: a choice also starts the line under the selector's
    update (a `change` event); on a loaded machine that one could finish before the choice's request had even
    reached the server, and a reload then showed "Autonomous" (the choice, never made, was not kept)."""
    set_mode = handler_index(page, "set_approval_mode")
    before, chosen = server_events(page), page.evaluate("fn => window.adFinished(fn)", set_mode)
    page.locator("#approval-mode input").click()
    page.get_by_role("option", name=label).click()
    page.wait_for_function("l => document.querySelector('#approval-mode input').value === l", arg=label)
    wait_for_handler(page, set_mode, chosen, timeout)  # the choice reached the server before the next message
    wait_for_events(page, before, 1)  # and the events the choice started have ended


def send_for_approval(page, text: str) -> None:
    """In "Approve each code step": send `text` and wait until the panel asks to approve the first step."""
    choose_mode(page, "Approve each code step")
    send(page, text)
    page.locator("#approve-btn").wait_for(state="visible")


def next_frames(page, frames: int = 2) -> None:
    """Wait until the browser has painted `frames` more frames (a change the page just made is on screen)."""
    page.evaluate("n => new Promise(done => { const step = k => k ? requestAnimationFrame(() => step(k - 1)) "
                  ": done(); step(n); })", frames)


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
    """The download links of the files panel (names are shortened on screen, hrefs are whole), once one of them
    contains `wait_for` (or after `timeout`, for the caller's assertion to say what is there)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    if wait_for is not None:
        try:
            page.wait_for_function("part => [...document.querySelectorAll('#files-panel a')]"
                                   ".some(a => (a.getAttribute('href') || '').includes(part))",
                                   arg=wait_for, timeout=timeout * 1000)
        except PlaywrightTimeout:
            pass
    return [a.get_attribute("href") or "" for a in page.locator("#files-panel a").all()]


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
    locator.wait_for()
    locator.evaluate("""(el, timeout) => new Promise((resolve, reject) => {
        const log = document.querySelector('#chat [role=log]'), deadline = Date.now() + timeout;
        let steadySince = null;
        const check = () => {
            const off = el.getBoundingClientRect().top - log.getBoundingClientRect().top;
            const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 1;
            if (Math.abs(off) <= 2 || (off > 0 && atEnd)) {
                steadySince = steadySince ?? Date.now();
                if (Date.now() - steadySince >= 1000) return resolve(true);
            } else {
                log.scrollTop += off;
                steadySince = null;
            }
            if (Date.now() > deadline) return reject(new Error('the chat kept scrolling away'));
            requestAnimationFrame(check);
        };
        check();
    })""", timeout * 1000)


def thought_titles(page, title: str | re.Pattern[str]):
    """The title bars of the chat's folded messages whose title has `title` (a string: any part of it)."""
    return page.locator("#chat .thought-group > .title").filter(has=page.get_by_text(title))


def open_thought(page, title: str | re.Pattern[str], every: bool = False) -> None:
    """Open the last folded message called `title` (or every one) and wait until each is open; an open one stays
    open (a click on it would fold it)."""
    bars = thought_titles(page, title)
    for bar in (bars.all() if every else [bars.last]):
        if not bar.evaluate("t => t.classList.contains('expanded')"):
            bar.click()
        bar.evaluate("t => new Promise(done => { const open = () => t.classList.contains('expanded') ? done(true) "
                     ": requestAnimationFrame(open); open(); })")
