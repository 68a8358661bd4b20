"""The API as a product (issue 31 item 9), against the real app on loopback through gradio_client: only the API's
own endpoints are offered, each with named, described inputs and a named result; `/ask` returns the answer with
absolute links, the chat's id, its status and its files as URLs; the chat list gives the ids; approvals pause a
run as on the page; and a caller never reaches another caller's chat or a file it did not upload (tested as an
attacker: other sessions, other tokens, guessed and stolen ids, forged file paths, raw HTTP)."""
from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError
from ui_testlib import PENGUINS, code_reply, run_app, write_transcript

from ui.api.endpoints import API_NAMES

SCRIPT = [
    code_reply("Count the species.",
               "import pandas as pd\ndf = pd.read_csv('penguins.csv')\ncounts = df['species'].value_counts()\n"
               "counts.to_csv('species_counts.csv')\n"
               "final_answer(f'{len(df)} penguins; the counts are in species_counts.csv')"),
    code_reply("Use the table already loaded.", "final_answer(f'islands: {df[\"island\"].nunique()}')"),
]


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("api")
    (base / "data").mkdir()
    with run_app(write_transcript(base / "script.json", SCRIPT), base / "data") as url:
        yield url


def client(url: str, token: str | None = None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    return Client(url, verbose=False, headers=headers)


def test_the_api_offers_its_own_endpoints_named_and_described(app: str) -> None:
    info = requests.get(app + "gradio_api/info", timeout=30).json()
    assert set(info["named_endpoints"]) == {f"/{name}" for name in API_NAMES}
    assert not info["unnamed_endpoints"]
    for name, endpoint in info["named_endpoints"].items():
        assert endpoint["description"], name
        assert "oauth_token" not in endpoint, name  # no sign-in on this server: nothing to pass
        assert ".py" not in json.dumps(endpoint), name  # no source file cited to a caller
        for parameter in endpoint["parameters"]:
            assert parameter["label"] == parameter["parameter_name"], (name, parameter["label"])
            assert parameter["python_type"]["description"], (name, parameter["label"])
        assert len(endpoint["returns"]) == 1, name  # one named result, not the page's component tuple
        for value in endpoint["returns"]:
            assert not value["label"].startswith("value_") and value["python_type"]["description"], (name, value)
    result = info["named_endpoints"]["/ask"]["returns"][0]["type"]
    assert {"chat_id", "status", "answer", "files", "decision"} <= set(result["properties"])


def test_ask_returns_the_answer_the_chat_and_its_files_as_urls(app: str) -> None:
    caller = client(app)
    result = caller.predict("How many penguins?", files=[handle_file(str(PENGUINS))], api_name="/ask")
    assert result["status"] == "finished", result
    # Markdown (the name escaped), the link absolute: a caller has no page to resolve a relative one against.
    assert result["answer"].startswith("344 penguins; the counts are in [species\\_counts.csv](http://127.0.0.1:")
    files = {f["name"]: f for f in result["files"]}
    assert set(files) == {"penguins.csv", "species_counts.csv"}
    link = result["answer"].split("](", 1)[1].split(")", 1)[0]
    assert link == files["species_counts.csv"]["url"]
    body = requests.get(link, timeout=30)
    assert body.ok and body.text.startswith("species,count")
    assert len(body.content) == files["species_counts.csv"]["bytes"]
    assert requests.get(files["penguins.csv"]["url"], timeout=30).content == PENGUINS.read_bytes()

    # A follow-up in the same chat uses what the first run left in the sandbox.
    follow = caller.predict("And islands?", chat_id=result["chat_id"], api_name="/ask")
    assert (follow["status"], follow["answer"], follow["chat_id"]) == ("finished", "islands: 3", result["chat_id"])
    chats = caller.predict(api_name="/list_chats")
    assert [c["chat_id"] for c in chats] == [result["chat_id"]] and chats[0]["title"]
    assert {f["name"] for f in caller.predict(result["chat_id"], api_name="/chat_files")} == set(files)


def test_a_pending_approval_is_returned_and_decided(app: str) -> None:
    caller = client(app)
    paused = caller.predict("How many penguins?", files=[handle_file(str(PENGUINS))], approval_mode="approve_code",
                            api_name="/ask")
    assert paused["status"] == "needs_decision" and paused["answer"] == "", paused
    decision = paused["decision"]
    assert decision["kind"] == "code" and "value_counts" in decision["details"]["code"]
    with pytest.raises(AppError, match="no pending decision"):
        caller.predict(paused["chat_id"], "not-the-id", "approve", api_name="/decide")
    done = caller.predict(paused["chat_id"], decision["id"], "approve", api_name="/decide")
    assert done["status"] == "finished" and done["answer"].startswith("344 penguins"), done


def test_a_bearer_token_keeps_chats_across_clients_and_no_one_else_reaches_them(app: str) -> None:
    token = secrets.token_hex(32)
    owner = client(app, token)
    made = owner.predict("How many penguins?", files=[handle_file(str(PENGUINS))], api_name="/ask")
    chat_id = made["chat_id"]
    assert [c["chat_id"] for c in client(app, token).predict(api_name="/list_chats")] == [chat_id]

    for attacker in (client(app), client(app, secrets.token_hex(32)), client(app, token.upper()[:-1] + "x")):
        assert attacker.predict(api_name="/list_chats") == []
        for args, kwargs in (((chat_id,), {"api_name": "/chat_files"}),
                             (("And islands?",), {"chat_id": chat_id, "api_name": "/ask"}),
                             ((chat_id,), {"api_name": "/stop_run"}),
                             ((chat_id, "x", "approve"), {"api_name": "/decide"})):
            with pytest.raises(AppError, match="No chat of yours has that id"):
                attacker.predict(*args, **kwargs)
    # The owner's chat went on unharmed: its sandbox still has the table.
    assert owner.predict("And islands?", chat_id=chat_id, api_name="/ask")["answer"] == "islands: 3"


def test_files_the_caller_did_not_upload_are_refused(app: str, tmp_path: Path) -> None:
    """A forged file entry naming a server path, or another caller's published copy, is not taken in."""
    victim = client(app).predict("How many penguins?", files=[handle_file(str(PENGUINS))], api_name="/ask")
    stolen = next(f for f in victim["files"] if f["name"] == "penguins.csv")["url"].split("file=", 1)[1]
    secret = tmp_path / "secret.csv"
    secret.write_text("secret,1\n")
    for path in ("/etc/passwd", str(secret), stolen, "/proc/self/environ"):
        payload = {"data": ["Read the file.", [{"path": path, "meta": {"_type": "gradio.FileData"},
                                                "orig_name": "x.csv"}], "", "autonomous", "", None, ""]}
        started = requests.post(app + "gradio_api/call/ask", json=payload, timeout=30)
        assert started.ok, started.text
        events = requests.get(app + f"gradio_api/call/ask/{started.json()['event_id']}", timeout=60).text
        assert "event: error" in events, (path, events[-500:])
        assert "secret,1" not in events and "root:" not in events
        if path == stolen:  # in Gradio's own folder, so Gradio lets it through: the app refuses it (ui/api/chats.py)
            assert "was not" in events, events[-500:]


def test_only_files_of_the_upload_route_are_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`uploaded_file` alone: a file in the private uploads folder is taken; a link in it (to a file outside or
    inside), a folder, the folder itself, a path that climbs out, a missing file are refused."""
    from ui.api import chats

    root = tmp_path / "uploads"
    (root / "abc").mkdir(parents=True)
    good = root / "abc" / "data.csv"
    good.write_text("a,b\n")
    outside = tmp_path / "secret.csv"
    outside.write_text("secret\n")
    (root / "abc" / "link.csv").symlink_to(outside)
    (root / "abc" / "inner.csv").symlink_to(good)
    (root / "linked").symlink_to(tmp_path)
    monkeypatch.setattr(chats, "private_uploads_root", lambda: root)
    assert chats.uploaded_file(str(good), "mine.csv") == chats.FileIn(str(good), "mine.csv")
    assert chats.uploaded_file(str(good), "../../etc/x.csv").name == "x.csv"
    # The upload folder itself may be reached through a link (a temp dir that is one): its files are still taken.
    (tmp_path / "via").symlink_to(root)
    monkeypatch.setattr(chats, "private_uploads_root", lambda: tmp_path / "via")
    assert chats.uploaded_file(str(tmp_path / "via" / "abc" / "data.csv"), "d.csv").path == str(good)
    assert chats.uploaded_file(str(good), "d.csv").path == str(good)
    monkeypatch.setattr(chats, "private_uploads_root", lambda: root)
    for path in (root / "abc" / "link.csv", root / "abc" / "inner.csv", root / "abc", root, outside,
                 root / "abc" / ".." / ".." / "secret.csv", root / "linked" / "secret.csv", root / "abc" / "none.csv",
                 "", None, 7):
        with pytest.raises(chats.ApiRefused):
            chats.uploaded_file(str(path) if isinstance(path, Path) else path, "x.csv")


def test_with_a_password_the_api_needs_it_and_chats_are_the_users(tmp_path: Path) -> None:
    """The page's sign-in holds for the API: no call without the password; the user's chats are theirs from any
    client."""
    (tmp_path / "data").mkdir()
    env = {"AGENTDECK_USERNAME": "analyst", "AGENTDECK_PASSWORD": "correct horse battery"}
    with run_app(write_transcript(tmp_path / "script.json", SCRIPT), tmp_path / "data", extra_env=env) as url:
        with pytest.raises(Exception):  # noqa: B017 (gradio_client's own error for a refused login varies)
            Client(url, verbose=False).predict(api_name="/list_chats")
        refused = requests.post(url + "gradio_api/call/list_chats", json={"data": []}, timeout=30)
        assert refused.status_code == 401
        first = Client(url, verbose=False, auth=("analyst", "correct horse battery"))
        made = first.predict("How many penguins?", files=[handle_file(str(PENGUINS))], api_name="/ask")
        assert made["status"] == "finished", made
        again = Client(url, verbose=False, auth=("analyst", "correct horse battery"))
        assert [c["chat_id"] for c in again.predict(api_name="/list_chats")] == [made["chat_id"]]
