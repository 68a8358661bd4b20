"""The MCP server (the `mcp` 2.x SDK's `MCPServer`, streamable HTTP) and the ASGI middleware that serves it at
`/gradio_api/mcp/` inside Gradio's app.

Why a middleware, not a mounted route: Gradio builds its FastAPI app inside `launch()`, and only the middleware
list (`app_kwargs`) reaches it; placed after the body limit and the security headers (ui/server.py), the endpoint
gets the page's request caps too. The SDK's session manager needs a task group for the app's life: it is started
in the server's event loop by the first MCP request. A request that needs sign-in and carries none is answered
401 here, before the SDK parses anything of it.
"""
from __future__ import annotations

import asyncio
import functools
import json
import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from starlette.requests import Request

from ui.mcp.caller import SignInRequired, check_signed_in, identify
from ui.mcp.chats import FileIn, McpChats, McpRefused
from ui.mcp.session_caps import TOO_MANY, SessionCaps
from ui.services import Services
from ui.session.session import Session
from ui.web.rate_limit import visitor_of

MCP_ROUTE = "/gradio_api/mcp"  # where Gradio's own MCP mode serves (its API_PREFIX + /mcp)
INSTRUCTIONS = ("AgentDeck's agent writes and runs Python in a sandbox. run_task starts a chat of yours (or continues "
                "one, with chat_id) and returns its answer, or a decision it waits for: continue it with resume. "
                "list_chats, list_files and read_file reach your chats and the files the agent made.")

ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


#: MCP tool calls hold a thread while a run goes on (minutes, or until a person decides). They take their threads
#: under a limiter of their own, so they never use up the tokens of anyio's default limiter, which the web server's
#: synchronous handlers share (40): the page stays served whatever MCP clients do. How many runs may go on at once
#: is the app's to say (runs at once per visitor, the sandbox cap); this only bounds the threads.
MCP_THREADS = 64
_limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.CapacityLimiter] = weakref.WeakKeyDictionary()


def mcp_limiter() -> anyio.CapacityLimiter:
    """The MCP calls' own thread limiter, one per event loop (a limiter belongs to the loop that made it)."""
    loop = asyncio.get_running_loop()
    limiter = _limiters.get(loop)
    if limiter is None:
        limiter = _limiters[loop] = anyio.CapacityLimiter(MCP_THREADS)
    return limiter


async def in_mcp_thread(work: Callable[[], Any], abandon_on_cancel: bool = False) -> Any:
    """`work()` in a worker thread under the MCP calls' own limiter."""
    return await anyio.to_thread.run_sync(work, abandon_on_cancel=abandon_on_cancel, limiter=mcp_limiter())


def build_server(services: Services) -> MCPServer:
    """The MCP server whose tools work on the app's services (ui/mcp/chats.py), each call as its caller."""
    chats = McpChats(services)
    server = MCPServer("agentdeck", instructions=INSTRUCTIONS, log_level="WARNING")

    async def as_caller(ctx: Context, work: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        request = ctx.request_context.request
        try:
            caller = identify(request, services.config, services.store)
            return await in_mcp_thread(lambda: work(caller, *args, **kwargs))
        except (McpRefused, SignInRequired) as exc:
            raise ToolError(str(exc)) from None

    async def running(ctx: Context, work: Callable[..., Any], *args: Any) -> Any:
        """A call that drains a run: cancelled (the client closed its request, or cancelled it), it stops the
        run as the page's Stop does, instead of leaving it to go on unseen."""
        sessions: list[Session] = []
        request = ctx.request_context.request
        try:
            caller = identify(request, services.config, services.store)
            return await in_mcp_thread(lambda: work(caller, *args, on_session=sessions.append),
                                       abandon_on_cancel=True)
        except (McpRefused, SignInRequired) as exc:
            raise ToolError(str(exc)) from None
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                for session in sessions:
                    await in_mcp_thread(functools.partial(services.leases.stop, session))
            raise

    @server.tool()
    async def run_task(task: str, ctx: Context, files: list[FileIn] | None = None,
                       chat_files: list[str] | None = None, chat_id: str | None = None,
                       approval_mode: str | None = None, model: str | None = None,
                       max_steps: int | None = None) -> dict[str, Any]:
        """Run the agent on `task` in a chat of yours: a new one, or the one `chat_id` names (its memory and files
        go on). `files`: files to attach ({name, content_base64}); `chat_files`: names of files already in that
        chat to attach again. `approval_mode`: autonomous (default), review_plans, approve_code, approve_tools or
        all. Returns {chat_id, status, ...}: status "finished" with the answer, "needs_decision" with the
        decision (its id, kind and what it is about: continue with resume), "stopped", "failed" or
        "not_started" (with the note that says why)."""
        return await running(ctx, lambda caller, on_session: chats.run_task(
            caller, ctx.request_context.request, task, files, chat_files, chat_id, approval_mode, model, max_steps,
            on_session=on_session))

    @server.tool()
    async def resume(chat_id: str, decision_id: str, action: str, ctx: Context, edited: Any = None,
                     reason: str = "", answer: str = "") -> dict[str, Any]:
        """Make the decision a run waits for and let it go on; returns as run_task does. `action`: approve,
        reject (with a `reason` for the agent), edit (`edited`: the new code or plan as text, or a tool call's
        arguments as an object) or answer (an `answer` to the agent's question)."""
        return await running(ctx, chats.resume, chat_id, decision_id, action, edited, reason, answer)

    @server.tool()
    async def list_chats(ctx: Context) -> list[dict[str, Any]]:
        """Your saved chats, newest first: chat_id, title, updated (seconds since the epoch)."""
        return await as_caller(ctx, chats.list_chats)

    @server.tool()
    async def list_files(chat_id: str, ctx: Context) -> list[dict[str, Any]]:
        """The files in one of your chats (uploads and what the agent made): name and bytes."""
        return await as_caller(ctx, chats.list_files, chat_id)

    @server.tool()
    async def read_file(chat_id: str, name: str, ctx: Context, max_bytes: int | None = None) -> dict[str, Any]:
        """A file of one of your chats, as text (UTF-8) or base64; `max_bytes` caps it (default 256 KB, at most
        1 MB: a larger file is refused with its size)."""
        return await as_caller(ctx, chats.read_file, chat_id, name, max_bytes)

    return server


def mcp_path(scope: dict[str, Any]) -> str | None:
    """The request's path if it is the MCP endpoint's or below it (below the app's root path if it has one)."""
    path = str(scope.get("path", ""))
    root = str(scope.get("root_path", "") or "").rstrip("/")
    if root and path.startswith(root + "/"):
        path = path[len(root):]
    return path if path == MCP_ROUTE or path.startswith(MCP_ROUTE + "/") else None


async def _answer(send: Any, status: int, message: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """A JSON-RPC error body (no id) with an HTTP status, as the SDK answers its own refusals."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


def _cross_site(scope: dict[str, Any]) -> bool:
    """A browser's request from another site (its Origin names another host than the request's Host): a page
    elsewhere must not drive a visitor's signed-in MCP session with their cookie."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
    origin = headers.get("origin")
    if not origin or origin == "null":
        return origin == "null"
    return urlsplit(origin).netloc.lower() != headers.get("host", "").lower()


class McpEndpointMiddleware:
    """Serves the MCP endpoint; every other request passes to the app untouched."""

    def __init__(self, app: ASGIApp, services: Services, server: MCPServer) -> None:
        self.app = app
        self.services = services
        self.server = server  # build_server's, made before launch (a wrong signature stops the start)
        self._manager: Any = None
        self._start_lock: asyncio.Lock | None = None
        self._runner: asyncio.Task[None] | None = None
        self._caps: SessionCaps | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = mcp_path(scope) if scope.get("type") == "http" else None
        if path is None:
            await self.app(scope, receive, send)
            return
        if path.rstrip("/") != MCP_ROUTE:  # Gradio's MCP mode had more below it (/sse, /schema): none of it here
            await _answer(send, 404, f"Not found: the MCP endpoint is {MCP_ROUTE}/ (streamable HTTP).")
            return
        if _cross_site(scope):
            await _answer(send, 403, "Cross-site requests are not served.")
            return
        try:
            check_signed_in(scope, self.services.config)
        except SignInRequired as exc:
            await _answer(send, 401, str(exc), [(b"www-authenticate", b'Bearer realm="agentdeck"')])
            return
        manager = await self._started()
        opening = scope.get("method") == "POST" and not any(
            name.lower() == b"mcp-session-id" for name, _ in scope.get("headers") or [])
        if not opening:
            await manager.handle_request(scope, receive, send)
            return
        visitor, caps = visitor_of(Request(scope)), self._caps
        if caps is None:
            raise RuntimeError("The MCP endpoint started without its session cap.")
        if not caps.claim(visitor):
            await _answer(send, 429, TOO_MANY.format(cap=caps.cap))
            return
        found: list[str] = []
        try:
            await manager.handle_request(scope, receive, caps.recording(send, found))
        finally:
            caps.release(visitor, found[0] if found else None)

    async def _started(self) -> Any:
        """The SDK's session manager, running in this event loop from the first request on."""
        if self._manager is not None:
            return self._manager
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._manager is None:
                config = self.services.config
                # Made by the SDK's own app builder (whose Starlette app is not used: the middleware routes here).
                self.server.streamable_http_app(
                    max_request_body_size=config.max_request_bytes,
                    session_idle_timeout=max(60.0, min(1800.0, config.idle_timeout_s)),
                    max_sessions=max(1, config.max_sessions))
                manager = self.server.session_manager
                sessions = getattr(manager, "_server_instances", None)
                if not isinstance(sessions, dict):  # the per-visitor cap reads it: an SDK without it is not served
                    raise RuntimeError("The MCP SDK's session manager has no _server_instances: the per-visitor "
                                       "session cap (ui/mcp/session_caps.py) needs updating for this version.")
                self._caps = SessionCaps(lambda: sessions)
                ready = asyncio.Event()

                async def run() -> None:
                    async with manager.run():
                        ready.set()
                        await asyncio.Event().wait()  # for the app's life

                self._runner = asyncio.get_running_loop().create_task(run())
                waiter = asyncio.ensure_future(ready.wait())
                await asyncio.wait([waiter, self._runner], return_when=asyncio.FIRST_COMPLETED)
                if not ready.is_set():
                    waiter.cancel()
                    logging.getLogger(__name__).error("The MCP endpoint could not start: %r", self._runner.exception())
                    raise RuntimeError("The MCP endpoint could not start.")
                self._manager = manager
        return self._manager
