"""`python -m ui.deploy` against a loopback stand-in for the Hub API: the requests made and the files sent."""
from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ui import deploy


WRITE_TOKEN = {"role": "write"}


class FakeHub(BaseHTTPRequestHandler):
    """Just enough of the Hub's HTTP API for checking a token, creating or updating a Space (visibility, secrets,
    hardware, a bucket volume) and a commit that adds and deletes files; `fail` makes one request answer 500."""

    requests: list[tuple[str, str, Any]] = []
    secrets: dict[str, dict] = {}
    committed: dict[str, bytes] = {}
    deleted: list[str] = []
    commits = 0
    space: dict[str, Any] | None = None  # the Space as the Hub has it (None: not created yet)
    token: dict[str, Any] = WRITE_TOKEN
    fail: tuple[str, str] | None = None  # (method, path suffix) answered with HTTP 500
    tokens_seen: set[str] = set()

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _reply(self, payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _handle(self) -> None:  # noqa: C901 - one branch per endpoint of the stand-in
        hub = type(self)
        body = self._body()
        path = self.path.split("?", 1)[0]
        try:
            parsed: Any = json.loads(body) if body and not path.endswith("/commit/main") else None
        except ValueError:
            parsed = None
        hub.requests.append((self.command, path, parsed))
        hub.tokens_seen.add(self.headers.get("authorization", ""))
        if hub.fail and self.command == hub.fail[0] and path.endswith(hub.fail[1]):
            self._reply({"error": "internal error"}, status=500)
        elif path == "/api/whoami-v2":
            if hub.token.get("role") == "invalid":
                self._reply({"error": "Invalid credentials in Authorization header"}, status=401)
            else:
                self._reply({"type": "user", "name": "me", "orgs": [{"name": "team"}],
                             "auth": {"type": "access_token", "accessToken": hub.token}})
        elif path == "/api/spaces/me/demo" and self.command == "GET":
            if hub.space is None:
                self._reply({"error": "Repository not found"}, status=404, headers={"X-Error-Code": "RepoNotFound"})
            else:
                self._reply({"id": "me/demo", "private": hub.space["private"],
                             "siblings": [{"rfilename": name} for name in hub.space["files"]]})
        elif path == "/api/repos/create":
            hub.space = {"private": bool(parsed.get("private")), "files": [".gitattributes"]}
            repo = f"{parsed.get('organization') or 'me'}/{parsed['name']}"
            self._reply({"url": f"http://{self.headers['Host']}/spaces/{repo}", "name": repo})
        elif path.endswith("/settings") and self.command == "PUT":
            hub.space["private"] = parsed.get("private", hub.space["private"])
            self._reply({})
        elif path.endswith("/secrets") and self.command == "GET":
            self._reply(hub.secrets)
        elif path.endswith("/secrets"):
            hub.secrets[parsed["key"]] = {"description": parsed.get("description")}
            self._reply({})
        elif path.endswith("/variables"):
            self._reply({parsed["key"]: {"value": parsed["value"]}})
        elif path.endswith("/hardware"):
            self._reply({"stage": "RUNNING", "hardware": {"current": "cpu-basic", "requested": parsed["flavor"]}})
        elif path.endswith("/volumes") or path.startswith("/api/buckets/"):
            self._reply({"url": f"http://{self.headers['Host']}/buckets/me/demo-chats", "id": "me/demo-chats"})
        elif path == "/api/validate-yaml":
            self._reply({"errors": [], "warnings": []})
        elif "/preupload/" in path:
            self._reply({"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                   for f in parsed["files"]]})
        elif path.endswith("/commit/main"):
            hub.commits += 1
            for line in body.decode().splitlines():
                item = json.loads(line)
                if item.get("key") == "file":
                    value = item["value"]
                    hub.committed[value["path"]] = base64.b64decode(value["content"])
                elif item.get("key") == "deletedFile":
                    hub.deleted.append(item["value"]["path"])
            self._reply({"commitUrl": f"http://{self.headers['Host']}/spaces/me/demo/commit/{'1' * 40}",
                         "commitOid": "1" * 40, "success": True})
        else:
            self._reply({"error": f"unexpected {self.command} {path}"}, status=404)

    do_GET = do_POST = do_PUT = _handle

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # the suite runs offline; this Hub is on loopback
    FakeHub.requests, FakeHub.secrets, FakeHub.committed, FakeHub.deleted = [], {}, {}, []
    FakeHub.commits, FakeHub.space, FakeHub.token, FakeHub.fail, FakeHub.tokens_seen = 0, None, WRITE_TOKEN, None, set()
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeHub)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_files_are_exactly_what_the_app_needs() -> None:
    files = deploy.files_to_publish()
    assert {"app.py", "README.md", "LICENSE", "requirements.txt"} <= set(files)
    assert "ui/assets/penguins.csv" in files and "agents/executor/worker.py" in files
    for rel in files:
        assert not rel.startswith(("data/", "tests/", ".venv/", "bench/", ".git")), rel
        assert "__pycache__" not in rel and "secret" not in rel.split("/")[-1]


def test_dry_run_prints_the_list_and_changes_nothing(hub: str, capsys: pytest.CaptureFixture) -> None:
    assert deploy.main(["me/demo", "--dry-run", "--endpoint", hub, "--token", "hf_x"]) == 0
    out = capsys.readouterr().out
    assert "app.py" in out and "Dry run" in out
    assert FakeHub.requests == []


def test_deploy_creates_the_space_sets_secrets_mounts_a_bucket_and_sends_the_files(
        hub: str, capsys: pytest.CaptureFixture) -> None:
    assert deploy.main(["me/demo", "--bucket", "auto", "--endpoint", hub, "--token", "hf_deployer"]) == 0
    out = capsys.readouterr().out
    assert f"Deployed: {hub}/spaces/me/demo" in out
    calls = [(method, path) for method, path, _ in FakeHub.requests]
    assert ("POST", "/api/repos/create") in calls
    create = next(body for method, path, body in FakeHub.requests if path == "/api/repos/create")
    assert create["type"] == "space" and create["sdk"] == "gradio"
    assert "AGENTDECK_SECRET" in FakeHub.secrets and "HF_TOKEN" not in FakeHub.secrets  # visitors pay their own
    assert ("POST", "/api/buckets/me/demo-chats") in calls
    volumes = next(body for method, path, body in FakeHub.requests if path.endswith("/volumes"))
    assert volumes["volumes"][0]["mountPath"] == "/data" and volumes["volumes"][0]["source"] == "me/demo-chats"
    assert set(FakeHub.committed) == set(deploy.files_to_publish())
    assert FakeHub.committed["app.py"] == (deploy.PROJECT_ROOT / "app.py").read_bytes()


def test_existing_secret_is_kept(hub: str) -> None:
    FakeHub.secrets = {"AGENTDECK_SECRET": {"description": "old"}}
    assert deploy.main(["me/demo", "--endpoint", hub, "--token", "hf_x"]) == 0
    posted = [body for method, path, body in FakeHub.requests if path.endswith("/secrets") and method == "POST"]
    assert posted == []  # the Space's signing secret stays, so its saved chats stay valid


def test_bad_space_id_is_refused(capsys: pytest.CaptureFixture) -> None:
    assert deploy.main(["just-a-name", "--dry-run"]) == 2
    assert "user/name" in capsys.readouterr().err


def test_sidebar_says_when_chats_are_not_on_persistent_storage(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from ui.saved.store import storage_is_ephemeral

    monkeypatch.delenv("SPACE_ID", raising=False)
    assert not storage_is_ephemeral(tmp_path)  # not a Space: the operator chose the folder
    monkeypatch.setenv("SPACE_ID", "me/demo")
    assert storage_is_ephemeral(tmp_path)
    assert not storage_is_ephemeral("/data/agentdeck")


def _git(root, *args: str) -> None:
    import subprocess

    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@example.com", "HOME": str(root), "PATH": "/usr/bin:/bin"})


def _checkout(tmp_path):
    """A small project in a git checkout: app.py and ui/ committed."""
    root = tmp_path / "project"
    (root / "ui").mkdir(parents=True)
    (root / "app.py").write_text("print('app')\n")
    (root / "ui" / "layout.py").write_text("LAYOUT = 1\n")
    (root / "ui" / "old.py").write_text("OLD = 1\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "first")
    return root


def test_dry_run_warns_about_uncommitted_files_it_would_upload(tmp_path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture) -> None:
    root = _checkout(tmp_path)
    (root / "ui" / "layout.py").write_text("LAYOUT = 2  # not committed\n")
    (root / "ui" / "new module.py").write_text("NEW = 1\n")  # untracked (a space in its name)
    (root / "data").mkdir()
    (root / "data" / "notes.txt").write_text("never uploaded\n")  # untracked but not uploaded: not listed
    monkeypatch.setattr(deploy, "PROJECT_ROOT", root)
    assert deploy.main(["me/demo", "--dry-run"]) == 0
    out = capsys.readouterr().out
    warning = out.split("Warning:", 1)[1].split("Secrets:", 1)[0]
    assert "2 of these files are not committed" in warning
    assert "ui/layout.py" in warning and "ui/new module.py" in warning
    assert "ui/old.py" not in warning and "app.py" not in warning and "notes.txt" not in warning


def test_no_warning_for_a_clean_checkout_a_plain_folder_or_a_machine_without_git(
        tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    root = _checkout(tmp_path)
    monkeypatch.setattr(deploy, "PROJECT_ROOT", root)
    assert deploy.main(["me/demo", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "ui/layout.py" in out and "Warning" not in out
    plain = tmp_path / "plain"
    (plain / "ui").mkdir(parents=True)
    (plain / "app.py").write_text("print('app')\n")
    assert deploy.uncommitted(plain, ["app.py"]) == []  # not a git checkout: nothing to compare with
    (root / "app.py").write_text("changed\n")
    assert deploy.uncommitted(root, ["app.py"]) == ["app.py"]
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    assert deploy.uncommitted(root, ["app.py"]) == []  # git missing: no failure
    assert deploy.main(["me/demo", "--dry-run"]) == 0
