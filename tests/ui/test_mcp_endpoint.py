"""The app's MCP endpoint (ui/mcp/), driven by the `mcp` SDK's own client over loopback against `python app.py`
with GRADIO_MCP_SERVER=True and the replay model: runs as saved chats of the caller's, their files, a decision
made through `resume`, and an attacker's tries (another caller's chats, paths out of the workspace, bodies past
the cap, malformed JSON-RPC, a cross-site page). The password app: sign-in required, the visitor's run limit.
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import secrets
import socket
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from ui_testlib import code_reply, run_app, write_transcript

from tests.waiting import wait_until_async

MCP_PATH = "gradio_api/mcp/"

FIRST = code_reply("Write the files.", """
open('out.txt', 'w').write('hi from the agent')
open('blob.bin', 'wb').write(bytes(range(256)))
final_answer(6 * 7)
""")
SECOND = code_reply("Again.", "final_answer('second reply')")
SCRIPT = [FIRST, SECOND]


def token() -> str:
    return secrets.token_hex(32)


async def _calls(url: str, headers: dict[str, str], calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    results = []
    async with create_mcp_http_client(headers=headers) as http:
        async with Client(streamable_http_client(url + MCP_PATH, http_client=http)) as client:
            for name, arguments in calls:
                results.append(await client.call_tool(name, arguments))
    return results


def call(url: str, bearer: str | None, tool: str, /, **arguments: Any) -> Any:
    """One tool call from a fresh MCP client: (is_error, structured result or the error's text)."""
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    result = asyncio.run(_calls(url, headers, [(tool, arguments)]))[0]
    if result.is_error:
        return True, " ".join(getattr(part, "text", "") for part in result.content)
    content = result.structured_content
    return False, content.get("result", content) if isinstance(content, dict) and len(content) == 1 else content


def ok(url: str, bearer: str | None, tool: str, /, **arguments: Any) -> Any:
    failed, value = call(url, bearer, tool, **arguments)
    assert not failed, value
    return value


def refused(url: str, bearer: str | None, tool: str, /, **arguments: Any) -> str:
    failed, value = call(url, bearer, tool, **arguments)
    assert failed, f"{tool}({arguments}) was served: {value}"
    return str(value)


def messages(error: BaseException) -> str:
    """Every message in an exception and the groups inside it (anyio's task groups wrap the client's errors)."""
    inner = getattr(error, "exceptions", ())
    return " | ".join([str(error), *(messages(e) for e in inner)])


def post_raw(url: str, body: bytes, headers: dict[str, str]) -> int:
    """POST over a plain socket (the server may answer and close before the body is all sent): the status."""
    parts = urlsplit(url)
    head = (f"POST /{MCP_PATH} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\n"
            + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + f"Content-Length: {len(body)}\r\n\r\n")
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
        sock.sendall(head.encode())
        try:
            for start in range(0, len(body), 1 << 16):
                sock.sendall(body[start:start + (1 << 16)])
        except OSError:
            pass  # answered and closed while the rest was on its way
        return int(sock.recv(65536).split(b" ", 2)[1])


def post(url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url + MCP_PATH, data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read(4096).decode(errors="replace")
    except urllib.error.HTTPError as answer:
        return answer.code, answer.read(4096).decode(errors="replace")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(the app's URL, its data folder)."""
    folder = tmp_path_factory.mktemp("mcp")
    (folder / "data").mkdir()
    script = write_transcript(folder / "script.json", SCRIPT)
    with run_app(script, folder / "data", {"GRADIO_MCP_SERVER": "True", "AGENTDECK_RUNS_PER_MINUTE": "200",
                                           "AGENTDECK_RUNS_AT_ONCE": "4", "AGENTDECK_MAX_REQUEST_MB": "1"}) as url:
        yield url, folder / "data"


@pytest.fixture
def app_url(served: tuple[str, Path]) -> str:
    return served[0]


def workspace_of(data: Path, bearer: str, chat_id: str) -> Path:
    """Where the chat of a bearer token's caller keeps its files (ui/saved/store.py: the owner is the token's hash)."""
    return data / "owners" / hashlib.sha256(bearer.encode()).hexdigest() / chat_id / "workspace"


def test_a_run_is_a_saved_chat_whose_files_can_be_listed_and_read(app_url: str) -> None:
    me = token()
    data = base64.b64encode(b"x,y\n1,2\n").decode()
    result = ok(app_url, me, "run_task", task="Write some files", files=[{"name": "data.csv", "content_base64": data}])
    assert result["status"] == "finished" and result["answer"] == "42", result
    chat = result["chat_id"]
    assert {"data.csv", "out.txt", "blob.bin"} <= set(result["files"])
    listed = {f["name"]: f["bytes"] for f in ok(app_url, me, "list_files", chat_id=chat)}
    assert listed["out.txt"] == len("hi from the agent") and listed["data.csv"] == 8
    assert ok(app_url, me, "read_file", chat_id=chat, name="out.txt")["text"] == "hi from the agent"
    assert ok(app_url, me, "read_file", chat_id=chat, name="data.csv")["text"] == "x,y\n1,2\n"
    binary = ok(app_url, me, "read_file", chat_id=chat, name="blob.bin")
    assert base64.b64decode(binary["base64"]) == bytes(range(256)) and "text" not in binary
    assert "over the cap" in refused(app_url, me, "read_file", chat_id=chat, name="blob.bin", max_bytes=10)
    chats = ok(app_url, me, "list_chats")
    assert [c["chat_id"] for c in chats] == [chat] and chats[0]["title"] == "Write some files · data.csv"
    # The chat goes on: its memory and files, a file of the chat sent again with the next message.
    again = ok(app_url, me, "run_task", task="And again", chat_id=chat, chat_files=["data.csv"])
    assert again["status"] == "finished" and again["answer"] == "second reply" and again["chat_id"] == chat


def test_a_run_that_needs_a_decision_says_so_and_resume_continues_it(app_url: str) -> None:
    me = token()
    paused = ok(app_url, me, "run_task", task="Compute", approval_mode="approve_code")
    assert paused["status"] == "needs_decision", paused
    decision = paused["decision"]
    assert decision["kind"] == "code" and "6 * 7" in decision["code"] and "answer" not in paused
    assert "out.txt" not in paused["files"]  # nothing ran before the decision
    assert "no pending decision" in refused(app_url, me, "resume", chat_id=paused["chat_id"], decision_id="nope",
                                            action="approve")
    done = ok(app_url, me, "resume", chat_id=paused["chat_id"], decision_id=decision["id"], action="edit",
              edited="final_answer('edited by the caller')")
    assert done["status"] == "finished" and done["answer"] == "edited by the caller", done
    assert "out.txt" not in done["files"]  # the proposed code never ran

    other = ok(app_url, me, "run_task", task="Compute again", approval_mode="approve_code")
    again = ok(app_url, me, "resume", chat_id=other["chat_id"], decision_id=other["decision"]["id"], action="reject",
               reason="not that")
    assert again["status"] == "needs_decision" and "second reply" in again["decision"]["code"], again
    assert "no pending decision" in refused(app_url, me, "resume", chat_id=other["chat_id"],
                                            decision_id=other["decision"]["id"], action="approve")  # made already
    end = ok(app_url, me, "resume", chat_id=other["chat_id"], decision_id=again["decision"]["id"], action="approve")
    assert end["status"] == "finished" and end["answer"] == "second reply"


def test_another_caller_never_reaches_a_chat_or_its_files(app_url: str) -> None:
    owner, attacker = token(), token()
    paused = ok(app_url, owner, "run_task", task="Private work", approval_mode="approve_code")
    chat, decision = paused["chat_id"], paused["decision"]["id"]
    for guess in (chat, chat.upper(), f"../{chat}", "0" * 32, f"{chat}/..", "", "../../owners"):
        for tool, arguments in (("list_files", {}), ("read_file", {"name": "out.txt"}),
                                ("resume", {"decision_id": decision, "action": "approve"}),
                                ("run_task", {"task": "mine now"})):
            refusal = refused(app_url, attacker, tool, chat_id=guess, **arguments)
            assert "No chat of yours" in refusal, (guess, tool, refusal)
    assert ok(app_url, attacker, "list_chats") == []
    # The owner's decision is still there, untouched by the attempts.
    done = ok(app_url, owner, "resume", chat_id=chat, decision_id=decision, action="approve")
    assert done["status"] == "finished" and done["answer"] == "42"
    # Without a token of their own nobody's chats are reached (the current protocol has no sessions).
    assert "Bearer" in refused(app_url, None, "list_chats")
    assert "Bearer" in refused(app_url, "short", "list_chats")


def test_file_names_never_leave_the_chats_workspace(served: tuple[str, Path]) -> None:
    app_url, data = served
    me = token()
    chat = ok(app_url, me, "run_task", task="Files")["chat_id"]
    workspace = workspace_of(data, me, chat)
    assert (workspace / "out.txt").is_file()
    (workspace / "link.txt").symlink_to("/etc/passwd")  # as code in the sandbox could leave one
    (workspace / "inner").mkdir()
    (workspace / "inner" / "up").symlink_to(workspace.parent)
    for name in ("../memory.json", "../meta.json", "/etc/passwd", "..", "link.txt", "workspace/../../secret",
                 "inner/up/memory.json", "inner/up/meta.json", "inner",
                 "../../../../../../etc/passwd", ".", "out.txt\0", "a" * 5000):
        refusal = refused(app_url, me, "read_file", chat_id=chat, name=name)
        assert "root:" not in refusal and "memory" not in refusal.lower(), refusal
    for names in (["../memory.json"], ["link.txt"], ["/etc/passwd"], ["missing.csv"], [".hidden"], ["inner"]):
        refused(app_url, me, "run_task", task="again", chat_id=chat, chat_files=names)
    assert "chat_id" in refused(app_url, me, "run_task", task="x", chat_files=["out.txt"])
    assert "Give a task" in refused(app_url, me, "run_task", task="   ")
    assert "base64" in refused(app_url, me, "run_task", task="x",
                               files=[{"name": "a.csv", "content_base64": "not base64!!"}])
    # A file named as a path arrives under a safe name inside the workspace, never beside it.
    sent = ok(app_url, me, "run_task", task="Files", files=[
        {"name": "../../escape.csv", "content_base64": base64.b64encode(b"a\n1\n").decode()}])
    names = [f["name"] for f in ok(app_url, me, "list_files", chat_id=sent["chat_id"])]
    assert all(".." not in n and not n.startswith("/") for n in names) and any("escape" in n for n in names)


def test_bodies_past_the_cap_malformed_json_rpc_and_cross_site_requests(app_url: str) -> None:
    me = token()
    auth = {"Authorization": f"Bearer {me}"}
    huge = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "run_task", "arguments": {"task": "x", "files": [
            {"name": "big.bin", "content_base64": "A" * (3 << 20)}]}}}).encode()
    assert post_raw(app_url, huge, auth) == 413
    for body in (b"{not json", b"[]", b"[1, 2, 3]", b'{"jsonrpc": "2.0"}', b'{"jsonrpc": "2.0", "id": 1}',
                 b'{"jsonrpc": "1.0", "id": 1, "method": "tools/call"}', b"\xff\xfe\x00", b"null",
                 json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                             "params": {"name": "read_file", "arguments": "nope"}}).encode()):
        status, text = post(app_url, body, auth)
        assert 400 <= status < 500, (body, status, text)
    status, _ = post(app_url, b"{}", {**auth, "Origin": "http://evil.example"})
    assert status == 403
    status, _ = post(app_url.rstrip("/") + "/gradio_api/mcp/sse/", b"{}", auth)  # nothing of Gradio's mode below it
    assert status in (404, 405)
    # Still serving after all of that.
    assert ok(app_url, me, "list_chats") == []


# ----- a password-protected app --------------------------------------------------------------------------------
USER, PASSWORD = "alice", "correct-horse-battery"


def sign_in(url: str) -> tuple[str, str]:
    """(cookie name, access token) Gradio's /login sets for the right password."""
    body = urllib.parse.urlencode({"username": USER, "password": PASSWORD}).encode()
    request = urllib.request.Request(url + "login", data=body,
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(request, timeout=15) as response:
        cookies = response.headers.get_all("set-cookie") or []
    for cookie in cookies:
        name, _, rest = cookie.partition("=")
        if name.startswith("access-token-") and not name.startswith("access-token-unsecure"):
            return name, rest.split(";", 1)[0]
    raise AssertionError(f"no access token cookie in {cookies}")


def test_with_a_password_the_endpoint_needs_sign_in_and_the_visitors_limits_apply(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    script = write_transcript(tmp_path / "script.json", SCRIPT)
    env = {"GRADIO_MCP_SERVER": "True", "AGENTDECK_USERNAME": USER, "AGENTDECK_PASSWORD": PASSWORD,
           "AGENTDECK_RUNS_PER_MINUTE": "1"}
    with run_app(script, tmp_path / "data", env) as url:
        initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}).encode()
        for headers in ({}, {"Authorization": f"Bearer {token()}"}, {"Authorization": "Basic YWxpY2U6eA=="},
                        {"Cookie": "access-token-x=forged"}):
            status, text = post(url, initialize, headers)
            assert status == 401 and "/login" in text, (headers, status, text)
        with pytest.raises(BaseException) as caught:  # the SDK's client is refused at its first request
            call(url, token(), "list_chats")
        assert "requires sign-in" in messages(caught.value)
        cookie, access = sign_in(url)
        first = ok(url, access, "run_task", task="Signed in")
        assert first["status"] == "finished" and first["answer"] == "42"
        assert "per minute" in refused(url, access, "run_task", task="One more")  # AGENTDECK_RUNS_PER_MINUTE=1
        # The same sign-in as a cookie: the same user's chats.
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        async def listed() -> Any:
            async with create_mcp_http_client(headers={"Cookie": f"{cookie}={access}"}) as http:
                async with Client(streamable_http_client(url + MCP_PATH, http_client=http)) as client:
                    return (await client.call_tool("list_chats", {})).structured_content

        assert [c["chat_id"] for c in asyncio.run(listed())["result"]] == [first["chat_id"]]


# ----- "Sign in with Hugging Face" (the loopback-only local mock, against a stand-in of the Hub) -----------------
def test_the_hugging_face_session_cookie_makes_the_calls_the_signed_in_users(tmp_path: Path) -> None:
    from test_attack_sign_in import OWNER, fake_hub, forged_cookie, press_sign_in, start_env

    async def as_cookie(url: str, cookie: str, calls: list[tuple[str, dict[str, Any]]],
                        bearer: str | None = None) -> list[Any]:
        headers = {"Cookie": cookie, **({"Authorization": f"Bearer {bearer}"} if bearer else {})}
        return [r.structured_content if not r.is_error else " ".join(p.text for p in r.content)
                for r in await _calls(url, headers, calls)]

    with fake_hub() as hub:
        _, data, env = start_env(tmp_path, hub, AGENTDECK_HF_LOGIN="1", GRADIO_MCP_SERVER="True")
        script = write_transcript(tmp_path / "script.json", SCRIPT)
        with run_app(script, data, extra_env=env) as url:
            signed = press_sign_in(url)
            assert signed is not None
            ran, listed = asyncio.run(as_cookie(url, signed, [("run_task", {"task": "As the owner"}),
                                                              ("list_chats", {})]))
            assert ran["status"] == "finished", ran
            assert [c["chat_id"] for c in listed["result"]] == [ran["chat_id"]]
            # Kept under the signed-in name, where the page keeps that user's chats (ui/saved/store.py).
            from ui.saved.store import ChatStore

            store = ChatStore(data)
            assert [m.id for m in store.list(store.owner_for_user(f"hf:{OWNER}"))] == [ran["chat_id"]]
            # A cookie the server did not sign names nobody: an anonymous caller, who reaches none of it.
            (forged,) = asyncio.run(as_cookie(url, forged_cookie(OWNER), [("list_chats", {})]))
            assert "Bearer" in forged
            forged_with_token = asyncio.run(as_cookie(url, forged_cookie(OWNER), [
                ("list_chats", {}), ("list_files", {"chat_id": ran["chat_id"]})], bearer=token()))
            assert forged_with_token[0] == {"result": []} and "No chat of yours" in forged_with_token[1]


# ----- a cancelled call stops its run ------------------------------------------------------------------------
SLOW = [code_reply("This takes a while.", "import time\nopen('started.txt', 'w').write('yes')\ntime.sleep(30)\n"
                                          "final_answer('slept')"),
        code_reply("Still here after the stop.", "final_answer('still usable')")]


def test_a_cancelled_call_stops_its_run_as_stop_does(tmp_path: Path) -> None:
    """The client gives up on run_task (its request closed): the run is stopped, not left running unseen, and the
    chat takes the next task."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    (tmp_path / "data").mkdir()
    script = write_transcript(tmp_path / "script.json", SLOW)
    me = token()
    with run_app(script, tmp_path / "data", {"GRADIO_MCP_SERVER": "True",
                                            "AGENTDECK_RUNS_PER_MINUTE": "500"}) as url:
        async def scenario() -> tuple[dict[str, Any], float]:
            async with create_mcp_http_client(headers={"Authorization": f"Bearer {me}"}) as http:
                async with Client(streamable_http_client(url + MCP_PATH, http_client=http)) as client:
                    call = asyncio.create_task(client.call_tool("run_task", {"task": "Sleep"}))

                    async def sleeping() -> str | None:
                        chats = (await client.call_tool("list_chats", {})).structured_content["result"]
                        if not chats:
                            return None
                        files = (await client.call_tool("list_files", {"chat_id": chats[0]["chat_id"]}))
                        names = [f["name"] for f in files.structured_content["result"]]
                        return chats[0]["chat_id"] if "started.txt" in names else None

                    chat = await wait_until_async(sleeping, 60, "the run's code to start sleeping")
                    call.cancel()
                    cancelled_at = asyncio.get_running_loop().time()

                    async def next_task() -> dict[str, Any] | None:
                        result = await client.call_tool("run_task", {"task": "Go on", "chat_id": chat})
                        assert not result.is_error, result.content
                        content = result.structured_content
                        return content if content["status"] != "not_started" else None  # the run still going

                    done = await wait_until_async(next_task, 25, "the chat to take the next task")
                    return done, asyncio.get_running_loop().time() - cancelled_at

        done, after = asyncio.run(scenario())
        assert done["status"] == "finished" and done["answer"] == "still usable", done
        assert after < 25  # the code slept 30 s: it was stopped
