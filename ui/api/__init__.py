"""The app's API for programs (`gradio_client`, HTTP): a few endpoints of its own that return what a caller needs
(the answer, the chat's id, its status, its files as URLs) rather than the page's component tuples.
`caller.py`: who calls (the page's sign-in, else a token or the client's session); `chats.py`: the work on the
app's services (each run a saved chat of the caller's, with the page's limits and approvals), without Gradio;
`endpoints.py`: the typed Gradio endpoints and their descriptions.
"""
