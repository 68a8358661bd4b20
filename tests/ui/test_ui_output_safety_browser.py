"""Agent output cannot phish: hostile thoughts and final answers in Chromium load nothing and cover nothing."""
from __future__ import annotations

import http.server
import threading
import urllib.request
from pathlib import Path

from browser_driver import BROWSER_MARKS, open_page, send, wait_for_text
from ui_testlib import run_app, write_transcript

pytestmark = BROWSER_MARKS


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/gif")
        self.end_headers()
        self.wfile.write(b"GIF89a")

    do_POST = do_GET

    def log_message(self, *args) -> None:
        pass


def hostile(host: str, tag: str) -> str:
    return (f"<img src='{host}/img-{tag}?d=secret'> ![x]({host}/md-{tag}.png) "
            f"<div style='position:fixed;inset:0;background:red;z-index:9999' id='overlay-{tag}'>OVERLAY</div>"
            f"<form action='{host}/form-{tag}' id='form-{tag}'><input type='password' name='pw'></form>"
            f"<a href='#' onclick=\"fetch('{host}/click-{tag}')\" id='link-{tag}'>click</a> MARK-{tag}")


def test_hostile_thoughts_and_answers_render_inert(tmp_path: Path) -> None:
    _Recorder.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    host = f"http://127.0.0.1:{server.server_address[1]}"
    answer = hostile(host, "answer")
    replies = [f"Thought: {hostile(host, 'thought')}\n```python\nfinal_answer({answer!r})\n```"]
    transcript = write_transcript(tmp_path / "t.json", replies)
    data = tmp_path / "data"
    data.mkdir()
    try:
        with run_app(transcript, data) as url:
            with urllib.request.urlopen(url) as page_response:
                csp = page_response.headers.get("Content-Security-Policy", "")
            assert "img-src 'self'" in csp and "form-action 'self'" in csp and "script-src-attr 'none'" in csp
            with open_page(url) as page:
                send(page, "Say something")
                wait_for_text(page, "MARK-answer", timeout=60)
                # A step that ran quickly (a warm sandbox) is folded when it first shows: open it, so the thought
                # is laid out and its markup, if it were live, would act.
                bar = page.locator("#chat .title").filter(has=page.get_by_text("Step 1", exact=True)).last
                if "expanded" not in (bar.get_attribute("class") or "").split():
                    bar.click()
                wait_for_text(page, "MARK-thought", timeout=10)
                for tag in ("thought", "answer"):
                    assert page.locator(f"#overlay-{tag}").count() == 0
                    assert page.locator(f"#form-{tag}").count() == 0
                    assert page.locator("#chat input[type=password]").count() == 0
                assert page.locator(f"#chat img[src^='{host}']").count() == 0
                # The page stays usable: the message box is on top, not covered.
                box = page.locator("#task-input textarea").bounding_box()
                top = page.evaluate("([x, y]) => document.elementFromPoint(x, y).closest('#task-input') !== null",
                                    [box["x"] + 5, box["y"] + 5])
                assert top
    finally:
        server.shutdown()
    assert _Recorder.hits == []
