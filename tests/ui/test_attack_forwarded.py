"""Attack: a visitor names their own address in X-Forwarded-For to get fresh per-visitor limits.

Written as the attacker: a launched app, its real HTTP routes (the upload route's hourly share, the run route's
per-minute limit), and whatever header lines and values the attacker likes. The header is believed only on a real
Space (SYSTEM=spaces) or with AGENTDECK_TRUST_FORWARDED=1, and then only its right-most hop, and only when that
hop is an IP address.
"""
from __future__ import annotations

import http.client
import urllib.parse
import uuid
from pathlib import Path

import pytest
from gradio_client import Client
from ui_testlib import code_reply, form, run_app, write_transcript

pytestmark = pytest.mark.slow

CHUNK = 700 * 1024  # two of them pass a 1 MB hourly share


def upload(url: str, headers: list[tuple[str, str]]) -> int:
    """POST one file of CHUNK bytes to Gradio's upload route with these header lines (repeats allowed)."""
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a.csv\"\r\n"
            f"Content-Type: text/csv\r\n\r\n").encode() + b"x" * CHUNK + f"\r\n--{boundary}--\r\n".encode()
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.putrequest("POST", "/gradio_api/upload")
        conn.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
        conn.putheader("Content-Length", str(len(body)))
        for name, value in headers:
            conn.putheader(name, value)
        conn.endheaders(body)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def run_once(url: str, model: str, forwarded: str) -> str:
    """One run from a fresh API session claiming the address `forwarded`: "ok" or the refusal's text."""
    client = Client(url, verbose=False, download_files=False, headers={"X-Forwarded-For": forwarded})
    try:
        client.predict({"text": "hi", "files": []}, **form(model, imports="pandas"), api_name="/run")
    except Exception as exc:
        return str(exc)
    return "ok"


def test_a_space_image_on_another_server_does_not_believe_the_header(tmp_path: Path) -> None:
    """SPACE_ID without SYSTEM=spaces (the Space's image run on the team's own server): every request named a
    new address and got a fresh limit. Now the peer counts, whatever the header says."""
    transcript = write_transcript(tmp_path / "t.json", [code_reply("done", "final_answer('ok')")] * 4)
    data = tmp_path / "data"
    data.mkdir()
    env = {"SPACE_ID": "me/demo", "SYSTEM": "", "AGENTDECK_TRUST_FORWARDED": "",
           "AGENTDECK_UPLOAD_MB_PER_HOUR": "1", "AGENTDECK_RUNS_PER_MINUTE": "1"}
    with run_app(transcript, data, extra_env=env) as url:
        assert upload(url, [("X-Forwarded-For", "203.0.113.1")]) == 200
        assert upload(url, [("X-Forwarded-For", "203.0.113.2")]) == 429  # the same visitor: its share is used
        assert upload(url, [("X-Forwarded-For", "203.0.113.3, 198.51.100.3")]) == 429
        model = f"replay:{transcript}"
        assert run_once(url, model, "203.0.113.4") == "ok"
        refused = run_once(url, model, "203.0.113.5")
        assert "Too many runs" in refused, refused


def test_behind_a_trusted_proxy_only_the_proxys_hop_counts_and_only_as_an_address(tmp_path: Path) -> None:
    """With AGENTDECK_TRUST_FORWARDED=1 the proxy's hop (the right-most: the proxy appends it after whatever the
    client sent) is the visitor; a value that is no IP address (a port, a zone, a name) is not a new visitor
    each time but falls back to the connection's peer."""
    transcript = write_transcript(tmp_path / "t.json", [code_reply("done", "final_answer('ok')")])
    data = tmp_path / "data"
    data.mkdir()
    env = {"AGENTDECK_TRUST_FORWARDED": "1", "AGENTDECK_UPLOAD_MB_PER_HOUR": "1", "SYSTEM": "", "SPACE_ID": ""}
    with run_app(transcript, data, extra_env=env) as url:
        # The client writes what it likes on the left (or in a line of its own); the proxy's hop is the last one.
        assert upload(url, [("X-Forwarded-For", "10.1.1.1, 203.0.113.9")]) == 200
        assert upload(url, [("X-Forwarded-For", "10.1.1.2, 203.0.113.9")]) == 429
        assert upload(url, [("X-Forwarded-For", "10.1.1.3"), ("X-Forwarded-For", "203.0.113.9")]) == 429
        assert upload(url, [("X-Forwarded-For", "198.51.100.7")]) == 200  # another visitor has its own share
        # Values that do not parse as an address: all the peer (127.0.0.1), one share between them.
        junk = ["::1%1", "::1%2", "fe80::1%eth0", "192.0.2.1:1111", "192.0.2.1:2222", "[::1]:80", "evil", ""]
        statuses = [upload(url, [("X-Forwarded-For", value)]) for value in junk]
        assert statuses == [200] + [429] * (len(junk) - 1), statuses
