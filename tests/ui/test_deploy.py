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

    def _handle(self) -> None:
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
            hub.space = {"private": parsed.get("visibility") == "private", "files": [".gitattributes"]}
            repo = f"{parsed.get('organization') or 'me'}/{parsed['name']}"
            self._reply({"url": f"http://{self.headers['Host']}/spaces/{repo}", "name": repo})
        elif path.endswith("/settings") and self.command == "PUT":
            hub.space["private"] = parsed.get("visibility", "private" if hub.space["private"] else "") == "private"
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
    from ui.saved.data_folder import storage_is_ephemeral

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


def _deploy(hub: str, *args: str) -> int:
    return deploy.main(["me/demo", "--endpoint", hub, "--token", "hf_deployer", *args])


def test_every_step_says_what_it_did_and_the_space_gets_the_pinned_requirements(
        hub: str, capsys: pytest.CaptureFixture) -> None:
    assert _deploy(hub) == 0
    out = capsys.readouterr().out
    for said in ("ok: the token of me may write to me", "done: created the public Space me/demo",
                 "done: generated the AGENTDECK_SECRET secret", "done: committed"):
        assert said in out, said
    pinned = (deploy.PROJECT_ROOT / "requirements-space.txt").read_bytes()
    assert FakeHub.committed["requirements.txt"] == pinned  # the Space installs the tested versions
    assert b"gradio==" in pinned and b"torch" not in pinned
    assert [path for method, path, _ in FakeHub.requests][0] == "/api/whoami-v2"  # checked before any change


def test_files_removed_locally_are_deleted_on_the_space_in_the_same_commit(hub: str,
                                                                           capsys: pytest.CaptureFixture) -> None:
    FakeHub.space = {"private": False, "files": [".gitattributes", "app.py", "ui/renamed_away.py", "old/notes.md"]}
    FakeHub.secrets = {"AGENTDECK_SECRET": {}}
    assert _deploy(hub) == 0
    assert FakeHub.commits == 1
    assert sorted(FakeHub.deleted) == ["old/notes.md", "ui/renamed_away.py"]  # .gitattributes is the Hub's own
    assert set(FakeHub.committed) == set(deploy.files_to_publish())
    out = capsys.readouterr().out
    assert "deleted ui/renamed_away.py" in out and "deleted 2 in one commit" in out
    assert ("POST", "/api/repos/create") not in [(m, p) for m, p, _ in FakeHub.requests]


@pytest.mark.parametrize(("token", "says"), [
    ({"role": "read"}, "not a write token"),
    ({"role": "invalid"}, "refused the token (HTTP 401: invalid or revoked): make a new one with write access at "
                          "http://127.0.0.1:"),
    ({"role": "fineGrained", "fineGrained": {"scoped": [{"entity": {"type": "user", "name": "me"},
                                                         "permissions": ["repo.content.read"]}]}},
     "no 'repo.write' permission on me"),
])
def test_a_token_without_write_rights_stops_before_anything_changes(
        hub: str, capsys: pytest.CaptureFixture, token: dict, says: str) -> None:
    FakeHub.token = token
    assert _deploy(hub) == 1
    err = capsys.readouterr().err
    assert says in err
    assert [path for _, path, _ in FakeHub.requests] == ["/api/whoami-v2"]  # nothing else was asked, or changed


def test_a_fine_grained_token_with_write_access_and_another_namespace(hub: str,
                                                                     capsys: pytest.CaptureFixture) -> None:
    FakeHub.token = {"role": "fineGrained", "fineGrained": {"scoped": [
        {"entity": {"type": "user", "name": "me"}, "permissions": ["repo.content.read", "repo.write"]}]}}
    assert _deploy(hub) == 0
    assert deploy.main(["someone-else/demo", "--endpoint", hub, "--token", "hf_x"]) == 1
    assert "not someone-else and not a member of it" in capsys.readouterr().err


def test_private_and_hardware(hub: str) -> None:
    assert _deploy(hub, "--private", "--hardware", "cpu-upgrade") == 0
    create = next(body for method, path, body in FakeHub.requests if path == "/api/repos/create")
    assert create["visibility"] == "private"
    hardware = next(body for method, path, body in FakeHub.requests if path.endswith("/hardware"))
    assert hardware == {"flavor": "cpu-upgrade"}
    FakeHub.requests = []
    FakeHub.space = {"private": False, "files": []}  # an existing public Space is made private
    assert _deploy(hub, "--private") == 0
    assert FakeHub.space["private"] is True
    assert any(method == "PUT" and path == "/api/spaces/me/demo/settings" for method, path, _ in FakeHub.requests)
    assert not any(path.endswith("/hardware") for _, path, _ in FakeHub.requests)  # not asked: unchanged


def test_unknown_hardware_is_refused_before_any_request(hub: str, capsys: pytest.CaptureFixture) -> None:
    assert _deploy(hub, "--hardware", "t4-huge") == 2
    assert "unknown hardware 't4-huge'" in capsys.readouterr().err and FakeHub.requests == []


def test_a_failure_midway_says_what_was_done_and_how_to_finish_or_undo(hub: str,
                                                                       capsys: pytest.CaptureFixture) -> None:
    FakeHub.fail = ("POST", "/secrets")
    assert _deploy(hub, "--bucket", "auto") == 1
    err = capsys.readouterr().err
    assert "could not set the Space's secrets: the Hub at 127.0.0.1" in err and "(HTTP 500)" in err
    assert "Done before it: created the public Space me/demo" in err
    assert f"run again (every step is safe to repeat): make space SPACE=me/demo ARGS='--bucket auto --endpoint {hub}'" \
        in err
    assert "hf_deployer" not in err  # the token is never printed
    # The undo goes to the Hub deployed to (--endpoint), never the default one where a same-named Space may exist.
    assert f"To undo instead, run: HF_ENDPOINT={hub} hf repos delete me/demo --type space --yes" in err
    assert FakeHub.commits == 0 and not any("/volumes" in path for _, path, _ in FakeHub.requests)
    FakeHub.fail = None  # the cause fixed, the same command finishes the job
    assert _deploy(hub, "--bucket", "auto") == 0
    assert FakeHub.commits == 1 and "AGENTDECK_SECRET" in FakeHub.secrets


def test_connection_refused_is_named_as_a_network_error(capsys: pytest.CaptureFixture,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert deploy.main(["me/demo", "--endpoint", f"http://127.0.0.1:{port}", "--token", "hf_x"]) == 1
    err = capsys.readouterr().err
    assert f"connection refused by 127.0.0.1:{port}" in err and "Nothing was changed" in err
    assert "refused the request" not in err and "Hub refused" not in err


def test_a_dns_failure_is_named_as_such(capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """The resolver's own error (socket.gaierror), raised for one name only: no query leaves the machine."""
    import socket

    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    real = socket.getaddrinfo

    def resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "hub.example":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    assert deploy.main(["me/demo", "--endpoint", "http://hub.example", "--token", "hf_x"]) == 1
    err = capsys.readouterr().err
    assert "the name hub.example could not be resolved (DNS)" in err and "refused" not in err


def test_a_hub_that_never_answers_is_a_timeout(capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts connections, never replies
        port = silent.getsockname()[1]
        code = deploy.main(["me/demo", "--endpoint", f"http://127.0.0.1:{port}", "--token", "hf_x",
                            "--timeout", "0.5"])
    assert code == 1
    err = capsys.readouterr().err
    assert f"127.0.0.1:{port} did not answer within 0.5 s (timeout)" in err and "refused" not in err


def test_deploy_needs_only_huggingface_hub(hub: str, tmp_path) -> None:
    """`make space` installs huggingface_hub alone: a real deploy in a process where any other third-party
    import (gradio, pandas, the project's agents ...) fails still goes through."""
    import subprocess
    import sys
    from importlib import metadata

    from packaging.requirements import Requirement

    allowed, queue = set(), ["huggingface_hub"]
    while queue:  # huggingface_hub and what it requires here, as top-level module names
        dist = metadata.distribution(queue.pop())
        if dist.metadata["Name"] in allowed:
            continue
        allowed.add(dist.metadata["Name"])
        requires = [Requirement(r) for r in dist.requires or []]
        queue += [r.name for r in requires if r.marker is None or r.marker.evaluate({"extra": ""})]
    modules = {name for dist, tops in ((d, metadata.distribution(d).read_text("top_level.txt") or "")
                                       for d in allowed) for name in tops.split()}
    modules |= {name for top, dists in metadata.packages_distributions().items() if set(dists) & allowed
                for name in [top]}
    script = tmp_path / "only_hub.py"
    script.write_text(f"""
import sys
ALLOWED = {sorted(modules | {"ui"})!r}

class Refuse:
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top not in sys.stdlib_module_names and top not in ALLOWED and not top.startswith("_"):
            raise ModuleNotFoundError(f"not in the deploy environment: {{name}}", name=name)
        return None

sys.meta_path.insert(0, Refuse())
from huggingface_hub import constants
constants.HF_HUB_OFFLINE = False
from ui import deploy
code = deploy.main(["me/demo", "--endpoint", {hub!r}, "--token", "hf_x"])
print("gradio" in sys.modules, "agents" in sys.modules)
raise SystemExit(code)
""")
    result = subprocess.run([sys.executable, str(script)], cwd=deploy.PROJECT_ROOT, capture_output=True, text=True,
                            timeout=120, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(deploy.PROJECT_ROOT)})
    assert result.returncode == 0, result.stderr
    assert "Deployed:" in result.stdout and result.stdout.strip().endswith("False False")
    assert FakeHub.commits == 1
    assert "gradio" not in modules and "pandas" not in modules  # the allow-list really is small


def test_make_space_installs_only_huggingface_hub() -> None:
    makefile = (deploy.PROJECT_ROOT / "Makefile").read_text(encoding="utf-8")
    rule = makefile.split("\nspace:", 1)[1].split("\n\n", 1)[0]
    assert "install" not in rule.split("\n", 1)[0].split()  # not the development set
    assert "$(DEPLOY_VENV)/bin/python -m ui.deploy" in rule
    setup = makefile.split("\n$(DEPLOY_STAMP):", 1)[1].split("\n\n", 1)[0]
    assert "pip install -q -c constraints.txt huggingface_hub\n" in setup + "\n"


def test_no_token_at_all_is_said_before_any_change(hub: str, capsys: pytest.CaptureFixture,
                                                   monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from huggingface_hub import constants

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))  # not logged in either
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(tmp_path / "no-tokens"))
    assert deploy.main(["me/demo", "--endpoint", hub]) == 1
    assert "no Hugging Face token: set HF_TOKEN, pass --token, or run `hf auth login`" in capsys.readouterr().err
    assert FakeHub.requests == []


def test_a_failed_commit_after_hardware_says_what_to_undo_by_hand(hub: str, capsys: pytest.CaptureFixture) -> None:
    FakeHub.space = {"private": False, "files": [".gitattributes", "app.py"]}
    FakeHub.secrets = {"AGENTDECK_SECRET": {}}
    FakeHub.fail = ("POST", "/commit/main")
    assert _deploy(hub, "--hardware", "cpu-upgrade") == 1
    err = capsys.readouterr().err
    assert "could not commit the files" in err and "requested cpu-upgrade hardware" in err
    assert "And by hand: set the hardware back in the Space's settings (it ran on cpu-basic)." in err
    assert "hf repos delete" not in err  # the Space existed before: never suggest deleting it


def test_undo_commands_name_no_endpoint_for_the_hub_the_hf_command_uses_anyway() -> None:
    from huggingface_hub import constants

    from ui.deploy_hub import cli_prefix

    assert cli_prefix(constants.ENDPOINT) == cli_prefix(constants.ENDPOINT + "/") == ""
    assert cli_prefix("http://127.0.0.1:9/") == "HF_ENDPOINT=http://127.0.0.1:9/ "
