"""Attack: becoming someone else through "Sign in with Hugging Face".

Outside a real Space Gradio does not log anyone in: it mocks the login with the machine's own Hugging Face account
(every visitor who presses the button becomes that account, one chat owner for all) and signs its session cookie
with a key derived from the empty client secret (`sha256("-v4")`), so a cookie forged offline for any name was
accepted. Written as the attacker: a launched app (its Hub is a loopback stand-in answering `whoami`, so Gradio's
mock can work), the real HTTP routes, and cookies made at home. What the app believes is read from the page-load
event a browser runs: the chat-list note names the Hugging Face user the chats are kept under.
"""
from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import itsdangerous
import pytest
from ui_testlib import code_reply, run_app, write_transcript

pytestmark = pytest.mark.slow

OWNER = "machine-owner"  # the account this machine's token belongs to


class _Hub(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if not self.path.startswith("/api/whoami"):
            self.send_error(404)
            return
        body = json.dumps({"type": "user", "name": OWNER, "fullname": "Machine Owner", "avatarUrl": "",
                           "orgs": [], "auth": {"type": "access_token"}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def fake_hub() -> Iterator[str]:
    """A loopback stand-in for the Hub's whoami (all Gradio's mock asks it)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def forged_cookie(username: str, client_secret: str = "") -> str:
    """A session cookie made offline the way Gradio's SessionMiddleware (starlette) signs one: itsdangerous'
    TimestampSigner with the key sha256(client secret + "-v4") over the base64 of the JSON session."""
    key = hashlib.sha256((client_secret + "-v4").encode()).hexdigest()
    info = {"access_token": "hf_forged", "token_type": "bearer", "scope": "openid profile inference-api",
            "expires_at": int(time.time()) + 3600,
            "userinfo": {"preferred_username": username, "name": username, "picture": "",
                         "profile": f"https://huggingface.co/{username}"}}
    data = base64.b64encode(json.dumps({"oauth_info": info}).encode())
    return "session=" + itsdangerous.TimestampSigner(key).sign(data).decode()


def page_config(url: str) -> dict:
    with urllib.request.urlopen(url + "config", timeout=10) as response:
        return json.load(response)


def believed_user(url: str, cookie: str | None = None) -> str | None:
    """Run the page-load event a browser runs (with `cookie`) and return the Hugging Face name the chat list is
    kept under, or None when the app takes the visitor as not signed in."""
    config = page_config(url)
    ids = {c["props"].get("elem_id"): c for c in config["components"] if c.get("props", {}).get("elem_id")}
    notes = {ids["chat-list-note"]["id"], ids["model-note"]["id"]}
    load = next(d for d in config["dependencies"] if notes <= set(d["outputs"]) and d.get("backend_fn"))
    headers = {"Content-Type": "application/json", **({"Cookie": cookie} if cookie else {})}
    session = uuid.uuid4().hex
    body = json.dumps({"data": [ids["model-picker"]["props"]["value"]], "fn_index": load["id"],
                       "session_hash": session, "event_data": None, "trigger_id": None}).encode()
    urllib.request.urlopen(urllib.request.Request(url + "gradio_api/queue/join", data=body, headers=headers),
                           timeout=10).read()
    stream = urllib.request.Request(url + f"gradio_api/queue/data?session_hash={session}", headers=headers)
    with urllib.request.urlopen(stream, timeout=30) as response:
        for line in response:
            if not line.startswith(b"data:"):
                continue
            message = json.loads(line[5:])
            if message.get("msg") == "process_completed":
                output = message.get("output") or {}
                assert message.get("success"), output
                list_note = str(output["data"][1])
                if "under your Hugging Face name" not in list_note:
                    return None
                return list_note.split("(", 1)[1].split(")", 1)[0]
    raise AssertionError("the page-load event never completed")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def press_sign_in(url: str) -> str | None:
    """What pressing the button does: /login/huggingface, then the callback it points to. The session cookie the
    server sets (None if it sets none)."""
    opener = urllib.request.build_opener(_NoRedirect)
    target = url + "login/huggingface"
    for _ in range(3):
        try:
            with opener.open(target, timeout=10) as response:
                cookie = response.headers.get("set-cookie")
                return cookie.split(";", 1)[0] if cookie and cookie.startswith("session=") else None
        except urllib.error.HTTPError as redirect:
            cookie = redirect.headers.get("set-cookie")
            if cookie and cookie.startswith("session="):
                return cookie.split(";", 1)[0]
            location = redirect.headers.get("location")
            if redirect.code not in (302, 303, 307) or not location:
                return None
            target = urllib.parse.urljoin(target, location)
    return None


def start_env(tmp_path: Path, hub: str, **extra: str) -> tuple[Path, Path, dict[str, str]]:
    transcript = write_transcript(tmp_path / "t.json", [code_reply("done", "final_answer('ok')")])
    data = tmp_path / "data"
    data.mkdir()
    env = {"HF_TOKEN": "hf_machine_token", "HF_ENDPOINT": hub, "HF_HOME": str(tmp_path / "hf"), "SYSTEM": "",
           "SPACE_ID": "", "AGENTDECK_HF_LOGIN": "", "HF_HUB_OFFLINE": "0", **extra}
    return transcript, data, env


def test_a_space_image_on_another_server_has_no_mocked_login(tmp_path: Path) -> None:
    """SPACE_ID without SYSTEM=spaces: pressing the button made every visitor the machine's own account, and a
    cookie forged for any name was taken. Now there is no login at all there, and the log says so once."""
    with fake_hub() as hub:
        transcript, data, env = start_env(tmp_path, hub, SPACE_ID="team/agentdeck")
        with run_app(transcript, data, extra_env=env) as url:
            names = {c["props"].get("elem_id") for c in page_config(url)["components"]}
            assert "hf-login" not in names
            assert press_sign_in(url) is None  # no route hands out a session
            assert believed_user(url, forged_cookie("victim")) is None
            assert believed_user(url, forged_cookie(OWNER)) is None
    log = "\n".join(p.read_text() for p in data.glob("server-*.log"))
    lines = [line for line in log.splitlines() if "no Sign in with Hugging Face button" in line]
    assert len(lines) == 1 and "SPACE_ID is set but SYSTEM is not 'spaces'" in lines[0], log[-2000:]


def test_the_local_mock_takes_no_cookie_it_did_not_sign(tmp_path: Path) -> None:
    """AGENTDECK_HF_LOGIN=1 on a loopback-only server: the mock still works (pressing the button signs in as the
    machine's account, which shows the check below can see a signed-in visitor), but its cookie key is no longer
    the one derived from the empty secret: a cookie forged offline names nobody."""
    with fake_hub() as hub:
        transcript, data, env = start_env(tmp_path, hub, AGENTDECK_HF_LOGIN="1")
        with run_app(transcript, data, extra_env=env) as url:
            names = {c["props"].get("elem_id") for c in page_config(url)["components"]}
            assert "hf-login" in names
            signed = press_sign_in(url)
            assert signed is not None
            assert believed_user(url, signed) == OWNER
            assert believed_user(url) is None
            assert believed_user(url, forged_cookie("victim")) is None
            assert believed_user(url, forged_cookie(OWNER)) is None
            assert believed_user(url, forged_cookie("victim", "fake-secret")) is None
