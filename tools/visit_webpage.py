"""visit_webpage: fetch a URL and return its content as Markdown the model can read.

Why it is built this way:
- The app may be shared, so by default the tool refuses private, loopback, link-local and other
  non-public addresses (SSRF). Redirects are followed by hand so every hop is checked, each hop's
  host name is resolved and all its addresses checked, and the socket's actual peer address is
  checked again after connecting (so a DNS answer that changes between check and connect — DNS
  rebinding — is caught too). `allow_private=True` or AGENTDECK_ALLOW_PRIVATE_URLS=1 turns all of
  this off for local use and tests. When an HTTP(S) proxy is configured in the environment the
  proxy does the connecting, and only the pre-connect DNS check applies.
- Pages are converted with markdownify after scripts, styles and navigation are stripped, and cut
  at `max_chars` with a note saying how much was cut and how to read on (`offset`).
- Plain text and JSON come back as they are; PDFs and binaries are refused with a message, because
  dumping bytes into the context helps nobody.
"""
from __future__ import annotations

import ipaddress
import re
import socket
from typing import Any
from urllib.parse import urljoin, urlsplit

from agents.errors import ToolError
from agents.tooling.base import Tool
from tools._common import env_flag, truncate, user_agent

ALLOW_PRIVATE_ENV = "AGENTDECK_ALLOW_PRIVATE_URLS"

_REDIRECT_CODES = {301, 302, 303, 307, 308}
_HTML_TYPES = {"text/html", "application/xhtml+xml"}
_JSON_TYPES = {"application/json", "text/json", "application/ld+json", "application/geo+json"}
_TEXT_TYPES = {"application/xml", "application/javascript", "application/x-javascript", "application/x-yaml",
               "application/yaml", "application/toml", "application/x-sh", "application/sql"}
_NOISE_TAGS = ["script", "style", "noscript", "template", "iframe", "svg", "canvas", "nav", "aside", "footer",
               "form", "button", "input", "select", "textarea", "link", "meta", "object", "embed"]
_NOISE_SELECTORS = ['[role="navigation"]', '[role="banner"]', '[role="contentinfo"]', '[role="search"]',
                    '[aria-hidden="true"]', "[hidden]"]
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


class BlockedAddressError(ToolError):
    """The URL (or a redirect target) points at an address the tool is not allowed to reach."""


class VisitWebpageTool(Tool):
    """Fetch a web page and return it as Markdown; refuses non-public addresses unless allowed."""

    name = "visit_webpage"
    description = (
        "Fetches a web page by URL and returns its content as Markdown (HTML is converted; plain text and "
        "JSON are returned as is; PDFs and other binary files are refused). Long pages are truncated with a "
        "note; pass `offset` to read further."
    )
    inputs = {
        "url": {"type": "string", "description": "The full http(s) URL of the page to read."},
        "offset": {
            "type": "integer",
            "description": ("Character offset into the page's Markdown to start from, to read a long page in parts "
                            "(default 0)."),
            "nullable": True,
        },
    }
    output_type = "string"
    requires_approval = True  # fetches any URL the model chooses
    approval_reason = "fetches a web page the agent chose"

    def __init__(self, allow_private: bool | None = None, max_chars: int = 40_000, timeout: float = 20.0,
                 max_bytes: int = 5_000_000, max_redirects: int = 10, user_agent_header: str | None = None) -> None:
        super().__init__()
        self.allow_private = env_flag(ALLOW_PRIVATE_ENV) if allow_private is None else allow_private
        self.max_chars = max_chars
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.user_agent_header = user_agent_header

    # ------------------------------------------------------------------ entry point
    def forward(self, url: str, offset: int | None = None) -> str:
        url = url.strip()
        final_url, response = self._fetch(url)
        with response:
            content_type, charset = _content_type(response.headers.get("Content-Type", ""))
            self._refuse_binary(final_url, content_type, response.headers.get("Content-Length"))
            body, cut_bytes = self._read_body(response)
        kind = _classify(content_type, body)
        if kind in ("pdf", "binary"):
            self._refuse_binary(final_url, "application/pdf" if kind == "pdf" else "application/octet-stream",
                                str(len(body)))
        text = _decode(body, charset, html=kind == "html")
        if kind == "html":
            title, markdown = html_to_markdown(text)
        else:
            title, markdown = None, text.strip()
        header = f"# {title}\n\n" if title else ""
        header += f"URL: {final_url}" + (f" (redirected from {url})" if final_url != url else "") + "\n"
        if cut_bytes:
            header += f"[Download stopped at {self.max_bytes:,} bytes; the rest of the document was not read.]\n"
        start = max(0, offset or 0)
        if start:
            if start >= len(markdown):
                return header + f"\n[offset {start:,} is past the end of this page ({len(markdown):,} characters).]"
            header += f"[Showing from character {start:,} of {len(markdown):,}.]\n"
        hint = f"Call visit_webpage(url={url!r}, offset={start + self.max_chars}) to read on."
        return header + "\n" + truncate(markdown[start:], self.max_chars, hint)

    # ------------------------------------------------------------------ fetching
    def _fetch(self, url: str) -> tuple[str, Any]:
        """GET the URL, following redirects by hand so each hop is checked; return (final URL, response)."""
        import requests

        session = requests.Session()
        if not self.allow_private:
            adapter = _guarded_adapter_class()()
            session.mount("http://", adapter)
            session.mount("https://", adapter)
        headers = {"User-Agent": self.user_agent_header or user_agent(),
                   "Accept": "text/html,application/xhtml+xml,text/plain,application/json;q=0.9,*/*;q=0.5"}
        current = url
        for _hop in range(self.max_redirects + 1):
            self._check_url(current)
            try:
                response = session.get(current, headers=headers, timeout=self.timeout, stream=True,
                                       allow_redirects=False)
            except BlockedAddressError:
                raise
            except requests.exceptions.Timeout as exc:
                raise ToolError(f"Timed out after {self.timeout:g}s fetching {current}: the site is slow or down. "
                                "Try again later or use another source.") from exc
            except requests.exceptions.InvalidURL as exc:
                raise ToolError(f"{current!r} is not a valid URL ({exc}).") from exc
            except requests.exceptions.ConnectionError as exc:
                raise ToolError(f"Could not connect to {urlsplit(current).hostname}: {_short_reason(exc)}. "
                                "Check the URL, or try again later.") from exc
            except requests.exceptions.RequestException as exc:
                raise ToolError(f"Fetching {current} failed: {_short_reason(exc)}.") from exc
            if response.status_code in _REDIRECT_CODES and response.headers.get("Location"):
                location = response.headers["Location"]
                response.close()
                current = urljoin(current, location)
                continue
            if response.status_code >= 400:
                reason = response.reason or ""
                response.close()
                advice = ("The page does not exist: check the URL or search for it."
                          if response.status_code in (404, 410) else
                          "The site refused access; try another source." if response.status_code in (401, 403) else
                          "The site is rate-limiting; wait before retrying or use another source."
                          if response.status_code == 429 else
                          "The server had an error; try again later." if response.status_code >= 500 else "")
                raise ToolError(f"HTTP {response.status_code} {reason} for {current}. {advice}".strip())
            return current, response
        raise ToolError(f"Too many redirects (more than {self.max_redirects}) starting from {url}.")

    def _check_url(self, url: str) -> None:
        """Refuse non-http(s) URLs and, unless allowed, hosts that resolve to non-public addresses."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise ToolError(f"Cannot fetch {url!r}: only http:// and https:// URLs are supported.")
        host = parts.hostname
        if not host:
            raise ToolError(f"Cannot fetch {url!r}: the URL has no host name.")
        if self.allow_private:
            return
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:
            raise ToolError(f"Cannot fetch {url!r}: invalid port.") from exc
        try:
            addresses = _resolve_host(host, port)
        except OSError as exc:
            raise ToolError(f"Could not resolve host {host!r} for {url}: check the URL.") from exc
        for address in addresses:
            if not is_public_address(address):
                raise BlockedAddressError(_blocked_message(url, host, address))

    def _refuse_binary(self, url: str, content_type: str, length: str | None) -> None:
        size = f" ({int(length):,} bytes)" if length and length.isdigit() else ""
        if content_type == "application/pdf":
            raise ToolError(f"{url} is a PDF document{size}; visit_webpage only reads HTML, plain text and JSON. "
                            "Look for an HTML version of the document (e.g. an abstract or landing page).")
        if content_type and not _is_textual(content_type):
            raise ToolError(f"{url} is binary content of type {content_type}{size}, not a web page; "
                            "visit_webpage only reads HTML, plain text and JSON.")

    def _read_body(self, response: Any) -> tuple[bytes, bool]:
        """Read at most max_bytes; return (body, whether it was cut)."""
        import requests

        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in response.iter_content(chunk_size=65536):
                chunks.append(chunk)
                size += len(chunk)
                if size > self.max_bytes:
                    return b"".join(chunks)[: self.max_bytes], True
        except requests.exceptions.RequestException as exc:  # read timeout or dropped connection mid-body
            raise ToolError(f"Reading {response.url} failed after {size:,} bytes: {_short_reason(exc)}. "
                            "The site is slow or down; try again later.") from exc
        return b"".join(chunks), False


# ---------------------------------------------------------------------- address checks
def _resolve_host(host: str, port: int) -> list[str]:
    """All addresses `host` resolves to (a module function so tests can simulate public hosts)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


#: IPv6 prefixes whose last 32 bits are an IPv4 address the packet is translated or tunnelled to: NAT64's
#: well-known prefix (RFC 6052), IPv4-compatible (deprecated) and SIIT's IPv4-translated addresses.
_LAST_32_IS_IPV4 = [ipaddress.ip_network(n) for n in ("64:ff9b::/96", "::/96", "::ffff:0:0:0/96")]
#: Local-use NAT64 (RFC 8215): the IPv4 address may sit anywhere in it, and it is the operator's own network.
_LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")


def is_public_address(address: str) -> bool:
    """True for globally routable unicast addresses; False for private, loopback, link-local, reserved...

    An IPv6 address that carries an IPv4 one (mapped, NAT64, 6to4, Teredo, IPv4-compatible) is public only if
    that IPv4 address is: Python counts NAT64's and 6to4's prefixes as global, yet `[64:ff9b::a9fe:a9fe]`
    reaches 169.254.169.254 (a cloud's metadata service) wherever NAT64 is deployed."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _LOCAL_NAT64:
            return False
        carried = [a for a in (ip.ipv4_mapped, ip.sixtofour, *(ip.teredo or ())) if a is not None]
        carried += [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF) for net in _LAST_32_IS_IPV4 if ip in net]
        if carried:
            return all(a.is_global and not a.is_multicast for a in carried) and (
                ip.ipv4_mapped is not None or ip.is_global)
    return ip.is_global and not ip.is_multicast


def _blocked_message(url: str, host: str, address: str) -> str:
    where = host if host == address else f"{host} ({address})"
    return (f"Refusing to fetch {url}: {where} is a private, loopback, link-local or otherwise non-public "
            "address, which this deployment does not allow. Only public web addresses can be visited "
            f"(the operator can allow local addresses with {ALLOW_PRIVATE_ENV}=1).")


def _verify_peer(host: str, sock: socket.socket) -> None:
    """After connecting: refuse if the socket actually reached a non-public address (DNS rebinding)."""
    try:
        address = str(sock.getpeername()[0])
    except OSError:
        return
    if not is_public_address(address):
        sock.close()
        raise BlockedAddressError(_blocked_message(f"http(s)://{host}", host, address))


_ADAPTER_CLASS: Any = None


def _guarded_adapter_class() -> Any:
    """A requests adapter whose direct connections check their peer address (built lazily, once)."""
    global _ADAPTER_CLASS
    if _ADAPTER_CLASS is not None:
        return _ADAPTER_CLASS
    from requests.adapters import HTTPAdapter
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    class GuardedHTTPConnection(HTTPConnection):
        def _new_conn(self) -> socket.socket:
            sock = super()._new_conn()
            _verify_peer(self.host, sock)
            return sock

    class GuardedHTTPSConnection(HTTPSConnection):
        def _new_conn(self) -> socket.socket:
            sock = super()._new_conn()
            _verify_peer(self.host, sock)
            return sock

    class GuardedHTTPConnectionPool(HTTPConnectionPool):
        ConnectionCls = GuardedHTTPConnection

    class GuardedHTTPSConnectionPool(HTTPSConnectionPool):
        ConnectionCls = GuardedHTTPSConnection

    class GuardedAdapter(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            # Only direct connections: proxied ones go through proxy_manager_for() and keep the defaults.
            self.poolmanager.pool_classes_by_scheme = {"http": GuardedHTTPConnectionPool,
                                                       "https": GuardedHTTPSConnectionPool}

    _ADAPTER_CLASS = GuardedAdapter
    return GuardedAdapter


# ---------------------------------------------------------------------- content handling
def _content_type(header: str) -> tuple[str, str | None]:
    """Split a Content-Type header into (media type, charset)."""
    parts = [p.strip() for p in header.split(";")]
    media = parts[0].lower() if parts else ""
    charset = None
    for param in parts[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip("\"'")
    return media, charset


def _is_textual(media: str) -> bool:
    return (media.startswith("text/") or media in _HTML_TYPES or media in _JSON_TYPES or media in _TEXT_TYPES
            or media.endswith("+json") or media.endswith("+xml"))


def _classify(media: str, body: bytes) -> str:
    """'html', 'text', 'pdf' or 'binary', from the media type, or by sniffing when it is missing or vague."""
    head = body[:1024].lstrip()
    if media in _HTML_TYPES:
        return "html"
    if media and media != "application/octet-stream" and _is_textual(media):
        return "text"
    if head.startswith(b"%PDF"):
        return "pdf"
    if head[:15].lower().startswith((b"<!doctype html", b"<html")):
        return "html"
    if b"\x00" in body[:4096]:
        return "binary"
    return "text"


def _decode(body: bytes, charset: str | None, html: bool) -> str:
    """Decode with the header charset, else a <meta> charset, else a BOM / UTF-8, else cp1252."""
    candidates: list[str] = []
    if charset:
        candidates.append(charset)
    if html:
        match = _META_CHARSET.search(body[:4096])
        if match:
            candidates.append(match.group(1).decode("ascii", "ignore"))
    if body.startswith(b"\xef\xbb\xbf"):
        candidates.insert(0, "utf-8-sig")
    elif body.startswith((b"\xff\xfe", b"\xfe\xff")):
        candidates.insert(0, "utf-16")
    candidates.append("utf-8")
    for name in candidates:
        try:
            return body.decode(name)
        except (LookupError, UnicodeDecodeError):
            continue
    return body.decode("cp1252", errors="replace")


def html_to_markdown(html: str) -> tuple[str | None, str]:
    """Strip scripts, styles and navigation noise from HTML and convert the rest to Markdown."""
    from bs4 import BeautifulSoup
    from markdownify import markdownify

    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else None
    for tag in soup(_NOISE_TAGS):
        tag.decompose()
    for selector in _NOISE_SELECTORS:
        for element in soup.select(selector):
            element.decompose()
    for header in soup.find_all("header"):  # site banners; keep headers inside the article itself
        if not header.find_parent(["article", "main"]):
            header.decompose()
    if soup.head:
        soup.head.decompose()
    root = soup.body or soup
    markdown = markdownify(str(root), heading_style="ATX", strip=["img"], bullets="-")
    markdown = re.sub(r"[ \t]+\n", "\n", markdown)
    markdown = re.sub(r"\n{3,}", "\n\n", markdown).strip()
    return title or None, markdown


def _short_reason(exc: BaseException) -> str:
    """The innermost, shortest useful reason of a requests/urllib3 error chain."""
    text = str(exc)
    match = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text)
    if match:
        return match.group(1).strip()
    return text if len(text) <= 200 else text[:197] + "..."
