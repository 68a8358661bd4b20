"""A loopback stand-in of the Hugging Face Hub's HTTP API: only the endpoints `huggingface_hub` calls to create
a repo, upload a folder (a README's metadata check, preupload, an NDJSON commit of base64 files) and download a
snapshot (repo info, the recursive tree, each file's resolve URL). Every request is recorded, so tests assert on
what was asked. Anything else answers 404 and is recorded too, so a new call by a newer huggingface_hub shows up
in a test.
"""
from __future__ import annotations

import base64
import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

#: Requests huggingface_hub makes of its own accord (its once-a-day registry of AI agent harnesses, for its
#: user-agent string): recorded, answered with an empty registry, left out of `calls()`.
HOUSEKEEPING = frozenset({"GET /api/agent-harnesses"})


@dataclass
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]  # names in lower case
    body: bytes


@dataclass
class Repo:
    files: dict[str, bytes] = field(default_factory=dict)
    commits: list[str] = field(default_factory=list)
    private: bool = False

    @property
    def sha(self) -> str:
        return self.commits[-1] if self.commits else "0" * 40


class HubStandIn:
    """Start with `with HubStandIn() as hub:`; `hub.url` is the endpoint, `hub.repos` what was uploaded."""

    def __init__(self) -> None:
        self.repos: dict[str, Repo] = {}
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> HubStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def calls(self) -> list[str]:
        """'METHOD /path' of each request for the API, in order (HOUSEKEEPING left out)."""
        return [call for call in (f"{r.method} {r.path}" for r in self.requests) if call not in HOUSEKEEPING]

    # -- the API ------------------------------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {key.lower(): value for key, value in self.headers.items()}
                request = Request(self.command, unquote(parts.path), parts.query, headers, body)
                with hub._lock:
                    hub.requests.append(request)
                    status, headers, payload = hub._answer(request)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_GET = do_POST = do_HEAD = do_PUT = _serve

        return Handler

    def _answer(self, request: Request) -> tuple[int, dict[str, str], bytes]:
        path, method = request.path, request.method
        segments = path.strip("/").split("/")
        if method == "POST" and path == "/api/repos/create":
            spec = json.loads(request.body or b"{}")
            repo_id = f"{spec['organization']}/{spec['name']}" if spec.get("organization") else spec["name"]
            existed = repo_id in self.repos
            self.repos.setdefault(repo_id, Repo(private=bool(spec.get("private"))))
            if existed:
                return self._json({"error": "You already created this model repo"}, 409)
            return self._json({"url": f"{self.url}/{repo_id}", "name": repo_id})
        if f"{method} {path}" in HOUSEKEEPING:
            return self._json({})
        if method == "POST" and path == "/api/validate-yaml":  # a README.md's metadata, checked before a commit
            content = json.loads(request.body or b"{}").get("content", "")
            warnings = [] if content.startswith("---\n") else [{"message": "empty or missing yaml metadata"}]
            return self._json({"errors": [], "warnings": warnings})
        if len(segments) >= 5 and segments[0] == "api" and segments[1] == "models":
            repo_id, action = f"{segments[2]}/{segments[3]}", segments[4]
            repo = self.repos.get(repo_id)
            if repo is None:
                return self._json({"error": "Repository not found"}, 404, {"X-Error-Code": "RepoNotFound"})
            if method == "POST" and action == "preupload":
                files = json.loads(request.body)["files"]
                return self._json({"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                             for f in files]})
            if method == "POST" and action == "commit":
                return self._commit(repo_id, repo, request.body)
            if method == "GET" and action == "revision":
                return self._json({"id": repo_id, "sha": repo.sha, "private": repo.private,
                                   "siblings": [{"rfilename": name} for name in sorted(repo.files)]})
            if method == "GET" and action == "tree":
                return self._json([{"type": "file", "path": name, "size": len(data),
                                    "oid": hashlib.sha1(data).hexdigest()}
                                   for name, data in sorted(repo.files.items())])
        if len(segments) >= 5 and segments[2] == "resolve":
            repo = self.repos.get(f"{segments[0]}/{segments[1]}")
            name = "/".join(segments[4:])
            if repo is None or name not in repo.files:
                return self._json({"error": "Entry not found"}, 404, {"X-Error-Code": "EntryNotFound"})
            data = repo.files[name]
            return 200, {"Content-Type": "application/octet-stream", "X-Repo-Commit": repo.sha,
                         "ETag": f'"{hashlib.sha1(data).hexdigest()}"'}, data
        return self._json({"error": f"the stand-in does not implement {method} {path}"}, 404)

    def _commit(self, repo_id: str, repo: Repo, body: bytes) -> tuple[int, dict[str, str], bytes]:
        for line in body.decode().splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            if item["key"] == "file":
                value = item["value"]
                if value.get("encoding") != "base64":
                    return self._json({"error": f"unexpected encoding {value.get('encoding')!r}"}, 400)
                repo.files[value["path"]] = base64.b64decode(value["content"])
            elif item["key"] == "deletedFile":
                repo.files.pop(item["value"]["path"], None)
        sha = hashlib.sha1(f"{repo_id}:{len(repo.commits)}:{sorted(repo.files)}".encode()).hexdigest()
        repo.commits.append(sha)
        return self._json({"success": True, "commitOid": sha, "commitUrl": f"{self.url}/{repo_id}/commit/{sha}"})

    @staticmethod
    def _json(value: Any, status: int = 200,
              headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(value).encode()


def point_huggingface_hub_at(hub: HubStandIn, monkeypatch: Any, tmp_path: Any) -> None:
    """Make the stand-in huggingface_hub's default endpoint, with its cache under `tmp_path`. The suite runs
    huggingface_hub offline (tests/conftest.py); with this, a call that forgot `endpoint=` still cannot leave the
    machine."""
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", hub.url)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", hub.url + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setattr(constants, "AGENT_HARNESSES_PATH", str(tmp_path / "harnesses.json"))
