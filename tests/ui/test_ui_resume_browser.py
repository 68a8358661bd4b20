"""Saved chats in a real browser (Debian's Chromium, Playwright): reload, then restart the app, resume.

One browser context for the whole test, so the browser's identity (gr.BrowserState, in localStorage) is the
same across the reload and the restart; the app restarts on the same port (localStorage is per origin).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from conftest import PROJECT_ROOT, code_reply, free_port, write_transcript

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SECRET = "browser-test-secret-0123456789abcdef"

FIRST = [code_reply("Set a variable and write a file.",
                    "answer_value = 6 * 7\nopen('note.txt', 'w').write('hello')\nprint('set', answer_value)"),
         code_reply("Done.", "final_answer(f'The value is {answer_value}')")]
AFTER_RESTART = [code_reply("Use the variable from before.", "print('still', answer_value + 1)"),
                 code_reply("Done.", "final_answer(f'Now {answer_value + 1}')")]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM),
                       reason="Debian's Chromium is not installed at /usr/bin/chromium (apt-get install -y chromium)"),
]


@contextmanager
def app_on(port: int, transcript: Path, data_dir: Path, timeout: float = 90.0) -> Iterator[str]:
    """`python app.py` on a given port (the restarted app must keep the browser's origin)."""
    env = {**os.environ, "AGENTDECK_MODEL": f"replay:{transcript}", "AGENTDECK_DATA_DIR": str(data_dir),
           "AGENTDECK_SECRET": SECRET, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port),
           "MPLBACKEND": "Agg", "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1"}
    log_path = data_dir / f"server-{time.time():.0f}.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, str(PROJECT_ROOT / "app.py")], cwd=PROJECT_ROOT, env=env,
                                stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/"
        try:
            deadline = time.time() + timeout
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"app.py exited early:\n{log_path.read_text()[-3000:]}")
                try:
                    with urllib.request.urlopen(url + "config", timeout=2):
                        break
                except OSError:
                    if time.time() > deadline:
                        raise RuntimeError(f"app.py did not start:\n{log_path.read_text()[-3000:]}")
                    time.sleep(0.3)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


def chat_text(page) -> str:
    return page.locator("#chat").inner_text()


def wait_for_text(page, needle: str, timeout: float = 40.0, where: str = "#chat") -> None:
    deadline = time.time() + timeout
    while needle not in page.locator(where).inner_text():
        if time.time() > deadline:
            raise AssertionError(f"{needle!r} never appeared in {where}:\n{page.locator(where).inner_text()[-2000:]}")
        time.sleep(0.1)


def send(page, text: str) -> None:
    box = page.locator("#task-input textarea")
    box.wait_for(state="visible")
    page.wait_for_function("!document.querySelector('#task-input textarea').disabled", timeout=40_000)
    box.fill(text)
    box.press("Enter")


def panel_links(page, wait_for: str, timeout: float = 15.0) -> list[str]:
    deadline = time.time() + timeout
    while True:
        links = [a.get_attribute("href") or "" for a in page.locator("#files-panel a").all()]
        if any(wait_for in href for href in links) or time.time() > deadline:
            return links
        time.sleep(0.2)


def test_resume_after_reload_and_after_restart(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    transcript = write_transcript(tmp_path / "script.json", FIRST)
    data = tmp_path / "data"
    data.mkdir()
    port = free_port()
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1440, "height": 1000})
        page = context.new_page()
        page.set_default_timeout(40_000)
        try:
            with app_on(port, transcript, data) as url:
                page.goto(url)
                page.wait_for_selector("#chat")
                # The page has loaded its chats once the browser holds its identity.
                page.wait_for_function("Object.keys(localStorage).includes('agentdeck-browser')")
                send(page, "Set a variable please")
                wait_for_text(page, "The value is 42")
                wait_for_text(page, "Set a variable please", where="#chat-list")
                # Reload (same app): the chat comes back from disk.
                page.reload()
                page.wait_for_selector("#chat")
                wait_for_text(page, "Chat restored")
                assert "The value is 42" in chat_text(page) and "Set a variable please" in chat_text(page)

            write_transcript(transcript, AFTER_RESTART)  # the restarted app's model answers the follow-up
            with app_on(port, transcript, data) as url:
                page.goto(url)
                page.wait_for_selector("#chat")
                wait_for_text(page, "Chat restored")
                text = chat_text(page)
                assert "Set a variable please" in text and "The value is 42" in text
                assert "Re-ran 2 recorded code steps" in text
                links = panel_links(page, "note.txt")
                assert any(href.endswith("note.txt") for href in links), links
                wait_for_text(page, "Set a variable please", where="#chat-list")
                send(page, "Add one to it")
                wait_for_text(page, "Now 43")  # the final answer used the rebuilt variable
                page.locator("#chat").get_by_text("Step 3", exact=False).first.click()  # open it, then its logs
                page.locator("#chat").get_by_text("Execution logs", exact=False).last.click()
                wait_for_text(page, "still 43", timeout=10)
                page.screenshot(path=str(tmp_path / "resumed.png"))
        finally:
            context.close()
            browser.close()
