"""A stranger looping over the MCP endpoint's `initialize` (each opens a session of the 2025 protocol, kept up
to 30 minutes idle) must not fill the server's session cap and lock every other MCP client out: each visitor
holds at most `MAX_SESSIONS_PER_VISITOR` open sessions. Against `python app.py` on loopback, with the
forwarded-address header trusted so two visitors can be told apart."""
from __future__ import annotations

import json
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from ui_testlib import code_reply, run_app, write_transcript

from ui.mcp.session_caps import MAX_SESSIONS_PER_VISITOR

INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "loop", "version": "1"}}}).encode()


def request(url: str, address: str, method: str = "POST", session: str | None = None) -> tuple[int, str | None]:
    """(status, the Mcp-Session-Id the answer names)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "X-Forwarded-For": address, **({"Mcp-Session-Id": session} if session else {})}
    sent = urllib.request.Request(url + "gradio_api/mcp/", data=INITIALIZE if method == "POST" else None,
                                  method=method, headers=headers)
    try:
        with urllib.request.urlopen(sent, timeout=30) as answer:
            return answer.status, answer.headers.get("mcp-session-id")
    except urllib.error.HTTPError as answer:
        return answer.code, None


def test_one_visitor_cannot_fill_the_servers_mcp_sessions() -> None:
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "data"
        data.mkdir()
        script = write_transcript(Path(folder) / "script.json", [code_reply("x", "final_answer(1)")])
        cap = 2 * MAX_SESSIONS_PER_VISITOR + 4  # the server's own cap on live sessions (the SDK's too)
        with run_app(script, data, {"GRADIO_MCP_SERVER": "True", "AGENTDECK_MAX_SESSIONS": str(cap),
                                    "AGENTDECK_TRUST_FORWARDED": "1"}) as url:
            opened: list[str] = []
            statuses = []
            for _ in range(cap + 2):  # the attacker's loop
                status, session = request(url, "203.0.113.7")
                statuses.append(status)
                if session:
                    opened.append(session)
            assert len(opened) == MAX_SESSIONS_PER_VISITOR, statuses
            assert statuses[-1] == 429
            # Everyone else still gets in.
            status, other = request(url, "198.51.100.20")
            assert status == 200 and other
            # The attacker's own room comes back as it closes sessions.
            assert request(url, "203.0.113.7", "DELETE", opened[0])[0] in (200, 204)
            status, again = request(url, "203.0.113.7")
            assert status == 200 and again
