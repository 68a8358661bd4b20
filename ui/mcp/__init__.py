"""The app's agent as MCP tools at `/gradio_api/mcp/` (streamable HTTP), answering `GRADIO_MCP_SERVER=True` and
`launch(mcp_server=True)` in place of Gradio's own MCP mode, which cannot run with the pinned `mcp` 2.x SDK
(ui/web/mcp_mode.py). `caller.py`: who calls (the page's sign-in); `chats.py`: the tools' work on the app's
services (each run a saved chat of the caller's own, with the page's limits and approvals); `endpoint.py`: the
MCP server and the ASGI middleware that serves it inside Gradio's app.
"""
