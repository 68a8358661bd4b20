"""visit_webpage against a loopback server: conversion, redirects, content types, errors and SSRF guards."""
from __future__ import annotations

import json

import pytest
from tools_testlib import LocalServer, Reply

from agents.errors import ToolError
from tools import visit_webpage as vw
from tools.visit_webpage import BlockedAddressError, VisitWebpageTool

ARTICLE = """<!DOCTYPE html>
<html><head><title>Test Article</title>
<style>body { color: red; } .secret-style {}</style>
<script>var trackingSecret = "SCRIPT-NOISE";</script>
</head>
<body>
<header><div class="logo">SITE-BANNER</div></header>
<nav><a href="/home">NAV-HOME</a> <a href="/about">NAV-ABOUT</a></nav>
<div role="navigation">ROLE-NAV-NOISE</div>
<main>
<h1>Main heading</h1>
<p>First paragraph with a <a href="https://example.org/ref">useful link</a>.</p>
<h2>Details</h2>
<ul><li>alpha</li><li>beta</li></ul>
<script>console.log("INLINE-SCRIPT")</script>
</main>
<aside>SIDEBAR-NOISE</aside>
<footer>FOOTER-NOISE</footer>
</body></html>"""

LATIN1_PAGE = "<html><head><title>Caf\xe9</title></head><body><p>Cr\xe8me br\xfbl\xe9e \xe0 la carte</p></body></html>"
META_LATIN1 = ('<html><head><meta charset="iso-8859-1"><title>Meta</title></head>'
               "<body><p>Na\xefve fa\xe7ade</p></body></html>")


def _routes(server: LocalServer) -> None:
    html = {"Content-Type": "text/html; charset=utf-8"}
    server.routes.update({
        "/page": Reply(200, ARTICLE, html),
        "/redirect": Reply(302, b"", {"Location": "/page"}),
        "/redirect-chain": Reply(301, b"", {"Location": "/redirect"}),
        "/loop": Reply(302, b"", {"Location": "/loop"}),
        "/redirect-to-loopback": Reply(302, b"", {"Location": f"http://127.0.0.1:{server.port}/page"}),
        "/large": Reply(200, "<html><body>" + "<p>" + "word " * 20_000 + "</p></body></html>", html),
        "/doc.pdf": Reply(200, b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj<<>>endobj\n",
                          {"Content-Type": "application/pdf"}),
        "/pdf-no-type": Reply(200, b"%PDF-1.7\n" + bytes(range(256)) * 4, {}),
        "/image.png": Reply(200, b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, {"Content-Type": "image/png"}),
        "/data.json": Reply(200, json.dumps({"name": "agentdeck", "items": [1, 2, 3]}),
                            {"Content-Type": "application/json"}),
        "/notes.txt": Reply(200, "plain *text* stays <b>as is</b>\nline two", {"Content-Type": "text/plain"}),
        "/latin1": Reply(200, LATIN1_PAGE.encode("latin-1"), {"Content-Type": "text/html; charset=ISO-8859-1"}),
        "/meta-latin1": Reply(200, META_LATIN1.encode("latin-1"), {"Content-Type": "text/html"}),
        "/slow": Reply(200, "<html><body>finally</body></html>", html, delay=3.0),
        "/forbidden": Reply(403, "no", {"Content-Type": "text/plain"}),
        "/boom": Reply(500, "oops", {"Content-Type": "text/plain"}),
    })


@pytest.fixture
def server(local_server: LocalServer) -> LocalServer:
    _routes(local_server)
    return local_server


@pytest.fixture
def tool() -> VisitWebpageTool:
    return VisitWebpageTool(allow_private=True, timeout=1.0)


def test_html_is_converted_and_noise_stripped(server: LocalServer, tool: VisitWebpageTool) -> None:
    out = tool(url=f"{server.base}/page")
    assert out.startswith("# Test Article")
    assert "# Main heading" in out and "## Details" in out
    assert "[useful link](https://example.org/ref)" in out
    assert "- alpha" in out
    for noise in ("SCRIPT-NOISE", "INLINE-SCRIPT", "color: red", "NAV-HOME", "ROLE-NAV-NOISE", "SITE-BANNER",
                  "SIDEBAR-NOISE", "FOOTER-NOISE"):
        assert noise not in out
    assert server.requests[0].headers["user-agent"].startswith("AgentDeck")


def test_redirects_are_followed_and_reported(server: LocalServer, tool: VisitWebpageTool) -> None:
    out = tool(url=f"{server.base}/redirect-chain")
    assert f"URL: {server.base}/page (redirected from {server.base}/redirect-chain)" in out
    assert "Main heading" in out


def test_redirect_loop_is_cut(server: LocalServer, tool: VisitWebpageTool) -> None:
    with pytest.raises(ToolError, match="Too many redirects"):
        tool(url=f"{server.base}/loop")


def test_large_page_is_truncated_with_note_and_offset_reads_on(server: LocalServer) -> None:
    tool = VisitWebpageTool(allow_private=True, max_chars=1000)
    out = tool(url=f"{server.base}/large")
    assert "truncated: showing the first 1,000 of 99,999 characters (98,999 cut)" in out
    assert "offset=1000" in out
    more = tool(url=f"{server.base}/large", offset=1000)
    assert "Showing from character 1,000" in more
    past = tool(url=f"{server.base}/large", offset=10**6)
    assert "past the end" in past


def test_download_is_capped(server: LocalServer) -> None:
    tool = VisitWebpageTool(allow_private=True, max_bytes=2000)
    out = tool(url=f"{server.base}/large")
    assert "Download stopped at 2,000 bytes" in out


def test_pdf_and_binary_are_refused(server: LocalServer, tool: VisitWebpageTool) -> None:
    with pytest.raises(ToolError, match="is a PDF document"):
        tool(url=f"{server.base}/doc.pdf")
    with pytest.raises(ToolError, match="is a PDF document"):
        tool(url=f"{server.base}/pdf-no-type")
    with pytest.raises(ToolError, match="binary content of type image/png"):
        tool(url=f"{server.base}/image.png")


def test_json_and_text_are_returned_as_is(server: LocalServer, tool: VisitWebpageTool) -> None:
    out = tool(url=f"{server.base}/data.json")
    assert json.loads(out.split("\n\n", 1)[1]) == {"name": "agentdeck", "items": [1, 2, 3]}
    text = tool(url=f"{server.base}/notes.txt")
    assert "plain *text* stays <b>as is</b>\nline two" in text


def test_encodings(server: LocalServer, tool: VisitWebpageTool) -> None:
    out = tool(url=f"{server.base}/latin1")
    assert out.startswith("# Café") and "Crème brûlée à la carte" in out
    meta = tool(url=f"{server.base}/meta-latin1")
    assert "Naïve façade" in meta


def test_http_errors(server: LocalServer, tool: VisitWebpageTool) -> None:
    with pytest.raises(ToolError, match=r"HTTP 404 .*check the URL"):
        tool(url=f"{server.base}/missing")
    with pytest.raises(ToolError, match=r"HTTP 403 .*refused access"):
        tool(url=f"{server.base}/forbidden")
    with pytest.raises(ToolError, match=r"HTTP 500 .*try again later"):
        tool(url=f"{server.base}/boom")


def test_timeout(server: LocalServer) -> None:
    with pytest.raises(ToolError, match=r"(Timed out after 0\.2s|slow or down)"):
        VisitWebpageTool(allow_private=True, timeout=0.2)(url=f"{server.base}/slow")


def test_bad_urls(tool: VisitWebpageTool) -> None:
    with pytest.raises(ToolError, match="only http:// and https://"):
        tool(url="file:///etc/passwd")
    with pytest.raises(ToolError, match="only http:// and https://"):
        tool(url="example.com/page")
    refused = VisitWebpageTool(allow_private=True, timeout=1.0)
    with pytest.raises(ToolError, match="Could not connect"):
        refused(url="http://127.0.0.1:9/")  # discard port: nothing listens there


# ---------------------------------------------------------------------- SSRF guard (default settings)
def test_private_addresses_refused_by_default(server: LocalServer) -> None:
    tool = VisitWebpageTool()
    assert tool.allow_private is False
    for url in (f"{server.base}/page", f"http://localhost:{server.port}/page", "http://10.1.2.3/",
                "http://169.254.169.254/latest/meta-data/", "http://[::1]/", "http://[::ffff:127.0.0.1]/",
                "http://0.0.0.0/", "http://100.64.0.1/"):
        with pytest.raises(BlockedAddressError, match="non-public"):
            tool(url=url)
    assert server.requests == []  # nothing was fetched


def test_env_var_allows_private(server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTDECK_ALLOW_PRIVATE_URLS", "1")
    assert "Main heading" in VisitWebpageTool()(url=f"{server.base}/page")


def _pretend_localhost_is_public(monkeypatch: pytest.MonkeyPatch) -> None:
    real = vw._resolve_host
    monkeypatch.setattr(vw, "_resolve_host",
                        lambda host, port: ["93.184.216.34"] if host == "localhost" else real(host, port))


def test_redirect_to_loopback_is_refused(server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # The first hop "looks public" (resolver patched, connect-time check bypassed); the redirect goes to 127.0.0.1.
    _pretend_localhost_is_public(monkeypatch)
    monkeypatch.setattr(vw, "_verify_peer", lambda host, sock: None)
    tool = VisitWebpageTool()
    with pytest.raises(BlockedAddressError, match=r"127\.0\.0\.1"):
        tool(url=f"http://localhost:{server.port}/redirect-to-loopback")
    assert [r.path for r in server.requests] == ["/redirect-to-loopback"]


def test_dns_rebinding_caught_at_connect(server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # The resolver says "public", but the socket really reaches 127.0.0.1: the peer check refuses.
    _pretend_localhost_is_public(monkeypatch)
    tool = VisitWebpageTool()
    with pytest.raises(BlockedAddressError, match=r"127\.0\.0\.1"):
        tool(url=f"http://localhost:{server.port}/page")
    assert server.requests == []


def test_public_address_check() -> None:
    assert vw.is_public_address("93.184.216.34")
    assert vw.is_public_address("2606:2800:220:1:248:1893:25c8:1946")
    for address in ("127.0.0.1", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.1.1", "::1", "fe80::1",
                    "fc00::1", "::ffff:10.0.0.1", "224.0.0.1", "0.0.0.0", "not-an-ip"):
        assert not vw.is_public_address(address), address


def test_ipv6_addresses_carrying_a_private_ipv4_one_are_refused() -> None:
    """NAT64 and 6to4 prefixes count as global, yet `[64:ff9b::a9fe:a9fe]` reaches 169.254.169.254 (a cloud's
    metadata service) wherever NAT64 is deployed: the IPv4 address an IPv6 one carries is what is checked."""
    for address in ("64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1", "64:ff9b::a00:1", "2002:a9fe:a9fe::1", "2002:7f00:1::",
                    "::127.0.0.1", "::ffff:0:a9fe:a9fe", "64:ff9b:1::a9fe:a9fe"):
        assert not vw.is_public_address(address), address
        with pytest.raises(vw.BlockedAddressError):
            vw.VisitWebpageTool(allow_private=False)._check_url(f"http://[{address}]/latest/meta-data/")
    for address in ("64:ff9b::5db8:d822", "2002:5db8:d822::1", "::ffff:93.184.216.34"):  # a public IPv4 inside
        assert vw.is_public_address(address), address
