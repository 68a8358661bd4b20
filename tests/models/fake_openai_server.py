"""A scripted OpenAI-compatible chat server on loopback, for testing the HTTP adapters offline.

Each request takes the next action from `script` (or the default reply when the script is empty):
  {"type": "reply", "content": str, "tool_calls": [{"name", "arguments"}], "usage": (prompt, completion),
   "ignore_stop": bool}
  {"type": "error", "status": int, "message": str}
  {"type": "drop_before"}                      close the connection without answering
  {"type": "drop_mid", "content": str}         stream part of `content`, then cut the connection
  {"type": "stall_mid", "content": str, "stall_s": float}
                                               stream part of `content`, then send nothing until `stall_s`
                                               passes or `release()` is called, then cut the connection
  {"type": "garbage_mid", "content": str}      stream part of `content`, then a chunk that is not JSON
  {"type": "repeat", "piece": str, "times": int}  stream the same chunk `times` times (litellm's loop guard)
An error action may carry "retry_after" (the Retry-After header's value).
"""
from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _cut_at_stop(text: str, stop: list[str] | str | None) -> tuple[str, bool]:
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    cuts = [text.find(s) for s in stops if s and s in text]
    return (text[: min(cuts)], True) if cuts else (text, False)


class FakeOpenAIServer:
    def __init__(self, default_content: str = "Hello from the fake server.") -> None:
        self.default_content = default_content
        self.script: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []  # the path each request was sent to
        self._lock = threading.Lock()
        self._release = threading.Event()
        self.stalled = threading.Event()  # set when a stall_mid response has started stalling
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(body)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    server.paths.append(self.path)
                    action = server.script.pop(0) if server.script else {"type": "reply"}
                server._respond(self, body, action)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._httpd.handle_error = lambda request, address: None  # cut connections are deliberate here
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()
        self._httpd.shutdown()
        self._httpd.server_close()

    def reset(self) -> None:
        self.release()
        with self._lock:
            self.script.clear()
            self.requests.clear()
            self.headers.clear()
            self.paths.clear()
        self._release.clear()
        self.stalled.clear()

    def release(self) -> None:
        """End every stall now (the stalled responses are then cut)."""
        self._release.set()

    # ----------------------------------------------------------------------------------------
    def _respond(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], action: dict[str, Any]) -> None:
        kind = action.get("type", "reply")
        if kind == "drop_before":
            handler.connection.shutdown(socket.SHUT_RDWR)
            handler.close_connection = True
            return
        if kind == "error":
            payload = json.dumps({"error": {"message": action.get("message", "error"), "type": "error",
                                            "code": action["status"]}}).encode()
            handler.send_response(action["status"])
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            if action.get("retry_after") is not None:
                handler.send_header("Retry-After", str(action["retry_after"]))
            handler.end_headers()
            handler.wfile.write(payload)
            return
        content = action.get("content", self.default_content)
        if not action.get("ignore_stop"):  # a server (or model) that ignores `stop`: trimmed client-side
            content, _ = _cut_at_stop(content, body.get("stop"))
        tool_calls = action.get("tool_calls") or []
        prompt_tokens, completion_tokens = action.get("usage", (11, 7))
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                 "total_tokens": prompt_tokens + completion_tokens}
        finish = "tool_calls" if tool_calls else "stop"
        if body.get("stream"):
            self._stream(handler, body, content, tool_calls, usage, finish, action)
            return
        message: dict[str, Any] = {"role": "assistant", "content": content if not tool_calls else (content or None)}
        if tool_calls:
            message["tool_calls"] = [
                {"id": f"call_{i}", "type": "function",
                 "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                for i, c in enumerate(tool_calls)]
        payload = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "created": 1,
                              "model": body.get("model", "fake"),
                              "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                              "usage": usage}).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def _stream(self, handler, body, content, tool_calls, usage, finish, action: dict[str, Any]) -> None:
        kind = action.get("type", "reply")
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()

        def send(data: dict[str, Any] | str) -> None:
            text = data if isinstance(data, str) else json.dumps(data)
            raw = f"data: {text}\n\n".encode()
            handler.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
            handler.wfile.flush()

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                    "model": body.get("model", "fake"),
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

        pieces = [content[i:i + 5] for i in range(0, len(content), 5)]
        if kind == "repeat":
            pieces = [action["piece"]] * action["times"]
        send(chunk({"role": "assistant", "content": ""}))
        for number, piece in enumerate(pieces):
            if kind in ("drop_mid", "stall_mid", "garbage_mid") and number == len(pieces) // 2:
                if kind == "garbage_mid":
                    send("{this is not json")
                    continue
                if kind == "stall_mid":
                    self.stalled.set()
                    self._release.wait(action.get("stall_s", 60.0))
                handler.connection.shutdown(socket.SHUT_RDWR)  # no terminating chunk: a cut connection
                handler.close_connection = True
                return
            send(chunk({"content": piece}))
        for index, call in enumerate(tool_calls):
            arguments = json.dumps(call["arguments"])
            send(chunk({"tool_calls": [{"index": index, "id": f"call_{index}", "type": "function",
                                        "function": {"name": call["name"], "arguments": arguments[:4]}}]}))
            send(chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[4:]}}]}))
        send(chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            send({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                  "model": body.get("model", "fake"), "choices": [], "usage": usage})
        send("[DONE]")
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()
