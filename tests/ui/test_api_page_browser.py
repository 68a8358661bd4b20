"""The API page shows only the ways of calling the app that work: not Gradio's MCP tab, which describes Gradio's own
MCP mode (GRADIO_MCP_SERVER=True serves the app's own endpoint instead: ui/mcp/, ui/web/mcp_mode.py, described in
the README), and only the API's own endpoints (ui/api/)."""
from __future__ import annotations

from pathlib import Path

from browser_driver import BROWSER_MARKS, open_page
from ui_testlib import code_reply, run_app, write_transcript

from ui.api.endpoints import API_NAMES

pytestmark = BROWSER_MARKS


def test_api_page_has_no_mcp_tab(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    script = write_transcript(tmp_path / "script.json", [code_reply("Answer.", "final_answer('x')")])
    with run_app(script, tmp_path / "data") as url, open_page(url) as page:
        page.locator("footer").get_by_text("API").first.click()  # the footer's "Use via API"
        tabs = page.locator(".docs-wrap .snippets .snippet")
        python = tabs.filter(has_text="Python")
        python.first.wait_for(state="visible")
        mcp = tabs.filter(has_text="MCP")
        assert mcp.count() == 1, "Gradio's API page no longer has an MCP tab where this test looks for it"
        assert not mcp.first.is_visible()
        assert tabs.filter(has_text="cURL").first.is_visible()


def test_api_page_shows_the_named_endpoints_only(tmp_path: Path) -> None:
    """Issue 31 item 9: the page lists /ask, /decide, /stop_run, /list_chats and /chat_files with their named
    parameters; none of the page's own events (`value_56`, the 15-element `/run`), no `oauth_token=` on a server
    without sign-in, no source file cited."""
    (tmp_path / "data").mkdir()
    script = write_transcript(tmp_path / "script.json", [code_reply("Answer.", "final_answer('x')")])
    with run_app(script, tmp_path / "data") as url, open_page(url) as page:
        page.locator("footer").get_by_text("API").first.click()
        docs = page.locator(".docs-wrap")
        docs.get_by_text("/chat_files").first.wait_for(state="visible")
        text = docs.inner_text()
        for name in API_NAMES:
            assert f'api_name="/{name}"' in text, name
        for named in ("task=", "chat_id=", "approval_mode=", "decision_id=", "action="):
            assert named in text, named
        assert "value_" not in text and "oauth_token" not in text and ".py" not in text, text[:3000]
        assert 'api_name="/run"' not in text and "/new_chat" not in text
