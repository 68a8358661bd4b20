"""The API page shows only the ways of calling the app that work: not Gradio's MCP tab, which describes Gradio's own
MCP mode (the app's API endpoints as tools); GRADIO_MCP_SERVER=True serves the app's own endpoint instead (ui/mcp/,
ui/web/mcp_mode.py), described in the README."""
from __future__ import annotations

from pathlib import Path

from browser_driver import BROWSER_MARKS, open_page
from ui_testlib import code_reply, run_app, write_transcript

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
