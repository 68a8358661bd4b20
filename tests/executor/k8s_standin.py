"""A loopback stand-in of the Kubernetes API server, for the `k8s` backend's tests: no cluster is reachable here.

The real `kubernetes` client talks to it through a kubeconfig that points at it (a bearer token it checks). It
serves what the backend calls, in the shapes of the real API (kubernetes-sigs/agent-sandbox v1beta1):
- the SandboxWarmPool and SandboxTemplate of deploy/k8s/sandbox.yaml (read from the project's manifest);
- SandboxClaims: create, get, delete, and list with `watch=true` (a stream of JSON lines: ADDED, MODIFIED,
  DELETED), filtered by `fieldSelector=metadata.name=...`;
- Sandboxes: get (the pod-name annotation a warm sandbox carries); Pods: get (the template's pod spec);
- pod exec over a websocket speaking `v5.channel.k8s.io`/`v4.channel.k8s.io` (each message's first byte is the
  channel: 0 stdin, 1 stdout, 2 stderr, 3 the exit Status; v5's 255 closes a channel).
Its "controller" binds each claim to a new Sandbox and pod after `bind_delay_s`. Its pods run for real: exec
runs the command with its `PodRuntime` (tests/executor/k8s_standin_pods.py; by default a local process as this
user, the pod's and the image's paths mapped to a folder per pod).

It records every request (`requests`) and injects the failures the backend must survive: `refuse_create`
(quota: an HTTP status and message), `never_ready` (claims stay Ready=False), `remove_pod` (the pod gone mid-run:
its processes killed, its exec streams dropped, pod and sandbox 404), `cut_streams` (exec connections dropped).
`stop()` ends every process and exec connection it ever started, in bounded time: a stand-in must never hang a
test.
"""
from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import secrets
import shutil
import tempfile
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from aiohttp import WSMsgType, web

from tests.conftest import PROJECT_ROOT
from tests.executor.k8s_standin_pods import LocalPods, Pod, PodRuntime, kill_exec

SANDBOX_YAML = PROJECT_ROOT / "deploy" / "k8s" / "sandbox.yaml"
CLAIM_API = "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/{ns}/{plural}"
SANDBOX_API = "/apis/agents.x-k8s.io/v1beta1/namespaces/{ns}/sandboxes/{name}"
POD_API = "/api/v1/namespaces/{ns}/pods/{name}"
SHUTDOWN_S = 5  # how long `stop` lets the server's handlers finish before it cancels them


@dataclass
class Recorded:
    """One request as the stand-in received it."""

    method: str
    path: str
    query: dict[str, list[str]]
    body: Any


def _drop(ws: web.WebSocketResponse) -> None:
    """Drop an exec connection as a lost pod or proxy does: no close frame, the TCP connection aborted."""
    if ws._req is not None and ws._req.transport is not None:
        ws._req.transport.abort()


def _status(code: int, reason: str, message: str) -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}
    return web.json_response(body, status=code)


class K8sStandIn:
    """Start with `start()` (or as a context manager); `kubeconfig(path)` writes a kubeconfig that reaches it."""

    def __init__(self, runtime: PodRuntime | None = None, bind_delay_s: float = 0.05) -> None:
        # Under /tmp, not pytest's folder (mode 0700): the worker runs as another user and must reach its pod's
        # workspace, as in a real pod.
        self.folder = Path(tempfile.mkdtemp(prefix="k8s-standin-"))
        os.chmod(self.folder, 0o711)
        self.runtime: PodRuntime = runtime if runtime is not None else LocalPods()
        self.bind_delay_s = bind_delay_s
        self.token = secrets.token_hex(16)
        self.requests: list[Recorded] = []
        self.claims: dict[tuple[str, str], dict[str, Any]] = {}
        self.sandboxes: dict[tuple[str, str], dict[str, Any]] = {}
        self.pods: dict[tuple[str, str], Pod] = {}
        self.refuse_create: tuple[int, str] | None = None
        self.never_ready = False
        self.exec_count = 0
        self._procs: set[asyncio.subprocess.Process] = set()  # every exec'd process not yet seen to end
        docs = [d for d in yaml.safe_load_all(SANDBOX_YAML.read_text()) if d]
        self.template = next(d for d in docs if d["kind"] == "SandboxTemplate")
        self.pool = next(d for d in docs if d["kind"] == "SandboxWarmPool")
        self._versions = itertools.count(100)
        self._watchers: list[tuple[str, str, asyncio.Queue[dict[str, Any]]]] = []
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="k8s-standin", daemon=True)
        self.port = 0

    # --- life ------------------------------------------------------------------------------------------------
    def start(self) -> K8sStandIn:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(30)
        return self

    def stop(self) -> None:
        """End every pod, then every process still running (a removed pod's too) and every exec connection,
        and the server: each step's wait is bounded, so the stand-in's loop is stopped whatever happened."""
        async def down() -> None:
            for pod in list(self.pods.values()):
                await self._end_pod(pod)
            await asyncio.gather(*(kill_exec(proc) for proc in list(self._procs)))
            if self._runner is not None:
                await self._runner.cleanup()  # its handlers get SHUTDOWN_S, then are cancelled
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        try:
            asyncio.run_coroutine_threadsafe(down(), self._loop).result(30)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> K8sStandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def call(self, fn: Callable[[], Awaitable[Any]]) -> Any:
        """Run a coroutine on the stand-in's loop and return its result (for the tests' injections)."""
        return asyncio.run_coroutine_threadsafe(fn(), self._loop).result(30)

    def kubeconfig(self, path: Path, namespace: str = "agentdeck-sandboxes") -> Path:
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "standin",
            "clusters": [{"name": "standin", "cluster": {"server": f"http://127.0.0.1:{self.port}"}}],
            "users": [{"name": "app", "user": {"token": self.token}}],
            "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "app",
                                                         "namespace": namespace}}],
        }
        path.write_text(yaml.safe_dump(config))
        return path

    async def _serve(self) -> None:
        app = web.Application(middlewares=[self._record])
        claims = CLAIM_API.format(ns="{ns}", plural="sandboxclaims")
        app.router.add_post(claims, self._create_claim)
        app.router.add_get(claims, self._list_claims)
        app.router.add_get(claims + "/{name}", self._get_claim)
        app.router.add_delete(claims + "/{name}", self._delete_claim)
        app.router.add_get(CLAIM_API.format(ns="{ns}", plural="sandboxwarmpools") + "/{name}", self._get_pool)
        app.router.add_get(SANDBOX_API.format(ns="{ns}", name="{name}"), self._get_sandbox)
        app.router.add_get(POD_API.format(ns="{ns}", name="{name}"), self._get_pod)
        app.router.add_get(POD_API.format(ns="{ns}", name="{name}") + "/exec", self._exec)
        self._runner = web.AppRunner(app, shutdown_timeout=SHUTDOWN_S)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None and server.sockets
        self.port = server.sockets[0].getsockname()[1]

    @web.middleware
    async def _record(self, request: web.Request, handler: Any) -> web.StreamResponse:
        body: Any = None
        if request.can_read_body:
            raw = await request.read()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw
        query: dict[str, list[str]] = {}
        for key, value in request.query.items():
            query.setdefault(key, []).append(value)
        self.requests.append(Recorded(request.method, request.path, query, body))
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return _status(401, "Unauthorized", "Unauthorized")
        response: web.StreamResponse = await handler(request)
        return response

    # --- claims ----------------------------------------------------------------------------------------------
    def _stamp(self, obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"]["resourceVersion"] = str(next(self._versions))
        return obj

    def _notify(self, ns: str, kind: str, obj: dict[str, Any]) -> None:
        for watch_ns, name, queue in self._watchers:
            if watch_ns == ns and name == obj["metadata"]["name"]:
                queue.put_nowait({"type": kind, "object": json.loads(json.dumps(obj))})

    async def _create_claim(self, request: web.Request) -> web.Response:
        ns = request.match_info["ns"]
        if self.refuse_create is not None:
            code, message = self.refuse_create
            return _status(code, "Forbidden" if code == 403 else "Conflict", message)
        body = await request.json()
        name = body.get("metadata", {}).get("name", "")
        if (ns, name) in self.claims:
            return _status(409, "AlreadyExists", f'sandboxclaims "{name}" already exists')
        pool = body.get("spec", {}).get("warmPoolRef", {}).get("name")
        claim = self._stamp({**body, "status": {}})
        self.claims[(ns, name)] = claim
        if pool != self.pool["metadata"]["name"]:
            claim["status"] = {"conditions": [{"type": "Ready", "status": "False", "reason": "WarmPoolNotFound",
                                               "message": f"warm pool {pool} not found"}]}
        elif self.never_ready:
            claim["status"] = {"conditions": [{"type": "Ready", "status": "False", "reason": "SandboxNotReady",
                                               "message": "no warm sandbox available"}]}
        else:
            self._loop.call_later(self.bind_delay_s, self._bind, ns, name)
        return web.json_response(claim, status=201)

    def _bind(self, ns: str, name: str) -> None:
        claim = self.claims.get((ns, name))
        if claim is None:
            return
        pool = self.pool["metadata"]["name"]
        sandbox_name = f"{pool}-{secrets.token_hex(3)}"
        pod_name = f"{sandbox_name}-{secrets.token_hex(3)}"  # adopted from the pool: differs from the sandbox
        pod = Pod(pod_name, ns, sandbox_name, self.folder / pod_name)
        self.pods[(ns, pod_name)] = pod
        asyncio.ensure_future(self._ready(ns, name, claim, pod, sandbox_name))

    async def _ready(self, ns: str, name: str, claim: dict[str, Any], pod: Pod, sandbox_name: str) -> None:
        """The pod started: the sandbox and the claim become Ready (as the controllers report it)."""
        try:
            await self.runtime.start(pod, self.template)
        except Exception as exc:  # the pod did not start: the claim says why (as the controller would)
            claim["status"] = {"conditions": [{"type": "Ready", "status": "False", "reason": "SandboxNotReady",
                                               "message": f"pod failed to start: {exc}"[:300]}]}
            self._notify(ns, "MODIFIED", self._stamp(claim))
            return
        if (ns, name) not in self.claims:  # deleted while its pod started
            self.pods.pop((ns, pod.name), None)
            pod.ended = True
            await self.runtime.stop(pod)
            return
        pod_name = pod.name
        self.sandboxes[(ns, sandbox_name)] = self._stamp({
            "apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
            "metadata": {"name": sandbox_name, "namespace": ns,
                         "annotations": {"agents.x-k8s.io/pod-name": pod_name},
                         "labels": {"agents.x-k8s.io/launch-type": "warm"}},
            "spec": {"podTemplate": self.template["spec"]["podTemplate"]},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "DependenciesReady"}],
                       "podIPs": ["10.0.0.7"]}})
        claim["status"] = {"conditions": [{"type": "Ready", "status": "True", "reason": "SandboxReady",
                                           "message": ""}],
                           "sandbox": {"name": sandbox_name, "podIPs": ["10.0.0.7"]}}
        claim["metadata"].setdefault("annotations", {})["agents.x-k8s.io/sandbox-name"] = sandbox_name
        self._notify(ns, "MODIFIED", self._stamp(claim))

    async def _get_claim(self, request: web.Request) -> web.Response:
        claim = self.claims.get((request.match_info["ns"], request.match_info["name"]))
        if claim is None:
            return _status(404, "NotFound", f'sandboxclaims "{request.match_info["name"]}" not found')
        return web.json_response(claim)

    async def _delete_claim(self, request: web.Request) -> web.Response:
        ns, name = request.match_info["ns"], request.match_info["name"]
        claim = self.claims.pop((ns, name), None)
        if claim is None:
            return _status(404, "NotFound", f'sandboxclaims "{name}" not found')
        sandbox = (claim.get("status") or {}).get("sandbox", {}).get("name")
        if sandbox:
            self.sandboxes.pop((ns, sandbox), None)
            for key, pod in list(self.pods.items()):
                if pod.sandbox == sandbox:
                    del self.pods[key]
                    await self._end_pod(pod)
        self._notify(ns, "DELETED", claim)
        return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Success",
                                  "details": {"name": name, "kind": "sandboxclaims"}})

    async def _list_claims(self, request: web.Request) -> web.StreamResponse:
        ns = request.match_info["ns"]
        selector = request.query.get("fieldSelector", "")
        name = selector.removeprefix("metadata.name=") if selector.startswith("metadata.name=") else None
        if request.query.get("watch") not in ("true", "True", "1"):
            items = [c for (n, _), c in self.claims.items() if n == ns and name in (None, c["metadata"]["name"])]
            return web.json_response({"apiVersion": "extensions.agents.x-k8s.io/v1beta1",
                                      "kind": "SandboxClaimList", "metadata": {}, "items": items})
        if name is None:
            return _status(400, "BadRequest", "the stand-in watches one claim by metadata.name")
        response = web.StreamResponse()
        response.content_type = "application/json"
        await response.prepare(request)
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        entry = (ns, name, queue)
        self._watchers.append(entry)
        try:
            if (ns, name) in self.claims:
                queue.put_nowait({"type": "ADDED", "object": self.claims[(ns, name)]})
            timeout = float(request.query.get("timeoutSeconds", "30"))
            with contextlib.suppress(TimeoutError, ConnectionError):
                async with asyncio.timeout(timeout):
                    while True:
                        event = await queue.get()
                        await response.write(json.dumps(event).encode() + b"\n")
        finally:
            self._watchers.remove(entry)
        with contextlib.suppress(ConnectionError):
            await response.write_eof()
        return response

    async def _get_pool(self, request: web.Request) -> web.Response:
        if request.match_info["name"] != self.pool["metadata"]["name"]:
            return _status(404, "NotFound", f'sandboxwarmpools "{request.match_info["name"]}" not found')
        return web.json_response(self.pool)

    async def _get_sandbox(self, request: web.Request) -> web.Response:
        sandbox = self.sandboxes.get((request.match_info["ns"], request.match_info["name"]))
        if sandbox is None:
            return _status(404, "NotFound", f'sandboxes "{request.match_info["name"]}" not found')
        return web.json_response(sandbox)

    async def _get_pod(self, request: web.Request) -> web.Response:
        pod = self.pods.get((request.match_info["ns"], request.match_info["name"]))
        if pod is None:
            return _status(404, "NotFound", f'pods "{request.match_info["name"]}" not found')
        spec = self.template["spec"]["podTemplate"]["spec"]
        return web.json_response({"apiVersion": "v1", "kind": "Pod",
                                  "metadata": {"name": pod.name, "namespace": pod.namespace},
                                  "spec": spec, "status": {"phase": "Running", "podIP": "10.0.0.7"}})

    # --- exec ------------------------------------------------------------------------------------------------
    async def _exec(self, request: web.Request) -> web.StreamResponse:
        pod = self.pods.get((request.match_info["ns"], request.match_info["name"]))
        if pod is None:
            return _status(404, "NotFound", f'pods "{request.match_info["name"]}" not found')
        containers = [c["name"] for c in self.template["spec"]["podTemplate"]["spec"]["containers"]]
        if request.query.get("container") not in containers:
            return _status(400, "BadRequest", f"container {request.query.get('container')} is not valid")
        command = request.query.getall("command", [])
        ws = web.WebSocketResponse(protocols=("v5.channel.k8s.io", "v4.channel.k8s.io"), max_msg_size=0)
        await ws.prepare(request)
        if pod.ended:  # removed during the handshake
            _drop(ws)
            return ws
        self.exec_count += 1
        proc = await self.runtime.exec(pod, command)
        self._procs.add(proc)
        if pod.ended:  # removed while its process started (a slow machine): the process goes with the pod
            _drop(ws)
            await kill_exec(proc)
            self._procs.discard(proc)
            return ws
        pod.procs.add(proc)
        pod.sockets.add(ws)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

        async def pump(reader: asyncio.StreamReader, channel: int) -> None:
            while chunk := await reader.read(65536):
                if ws.closed:
                    return
                await ws.send_bytes(bytes([channel]) + chunk)

        async def take_stdin() -> None:
            async for msg in ws:
                if msg.type != WSMsgType.BINARY or not msg.data:
                    continue
                channel, payload = msg.data[0], msg.data[1:]
                if channel == 0 and not proc.stdin.is_closing():
                    proc.stdin.write(payload)
                    with contextlib.suppress(ConnectionError):
                        await proc.stdin.drain()
                elif channel == 255 and payload[:1] == b"\x00":
                    proc.stdin.close()

        pumps = [asyncio.ensure_future(pump(proc.stdout, 1)), asyncio.ensure_future(pump(proc.stderr, 2))]
        stdin_task = asyncio.ensure_future(take_stdin())
        exited = asyncio.ensure_future(proc.wait())
        exited.add_done_callback(lambda _: self._procs.discard(proc))
        try:
            await asyncio.wait({stdin_task, exited}, return_when=asyncio.FIRST_COMPLETED)
            if not exited.done():  # the client went away or the stream was cut: the process loses its stdin
                with contextlib.suppress(OSError):
                    proc.stdin.close()
                return ws
            await asyncio.gather(*pumps, return_exceptions=True)
            code = exited.result()
            status = ({"metadata": {}, "status": "Success"} if code == 0 else
                      {"metadata": {}, "status": "Failure",
                       "message": f"command terminated with non-zero exit code: {code}",
                       "reason": "NonZeroExitCode",
                       "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}})
            with contextlib.suppress(ConnectionError):
                await ws.send_bytes(b"\x03" + json.dumps(status).encode())
                await ws.close()
            return ws
        finally:
            stdin_task.cancel()
            pod.sockets.discard(ws)
            if exited.done():
                pod.procs.discard(proc)

    # --- failures --------------------------------------------------------------------------------------------
    async def _end_pod(self, pod: Pod) -> None:
        pod.ended = True
        await asyncio.gather(*(kill_exec(proc) for proc in list(pod.procs)))
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.runtime.stop(pod), 30)
        for ws in list(pod.sockets):
            _drop(ws)

    def remove_pod(self, name: str, namespace: str = "agentdeck-sandboxes") -> None:
        """The pod is gone mid-run (evicted, its node lost): processes killed, streams dropped, pod 404, the
        sandbox not ready."""
        async def gone() -> None:
            pod = self.pods.pop((namespace, name))
            sandbox = self.sandboxes.get((namespace, pod.sandbox))
            if sandbox is not None:
                sandbox["status"] = {"conditions": [{"type": "Ready", "status": "False",
                                                     "reason": "DependenciesNotReady"}]}
            await self._end_pod(pod)

        self.call(gone)

    def cut_streams(self) -> int:
        """Drop every open exec connection (a proxy or the API server restarting); returns how many."""
        async def cut() -> int:
            count = 0
            for pod in self.pods.values():
                for ws in list(pod.sockets):
                    if not ws.closed and ws._req is not None and ws._req.transport is not None:
                        _drop(ws)
                        count += 1
            return count

        return int(self.call(cut))

    def live_processes(self) -> int:
        """How many exec'd processes run, of any pod (a removed pod's too), as the stand-in's loop knows it."""
        async def count() -> int:
            return sum(1 for proc in self._procs if proc.returncode is None)

        return int(self.call(count))
