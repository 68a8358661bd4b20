"""The app's API as Gradio endpoints: `/ask`, `/decide`, `/stop_run`, `/list_chats` and `/chat_files`, typed
functions registered with `gr.api` (named, described inputs and one named result each), wired by ui/layout.py
after the page, whose own events are then hidden from the API (`gradio_callers.hide_from_api`).

Each call is its caller's (ui/api/caller.py) and does its work through ui/api/chats.py; a refusal reaches the
client as a `gr.Error` with what to do. Example use: the README's "Calling the app from Python".
"""

from typing import Any, Literal, TypedDict  # (no postponed annotations: Gradio reads the return type as it is)

import gradio as gr
from gradio.data_classes import FileData

from ui.api.caller import ApiCaller, identify
from ui.api.chats import ApiChats, ApiRefused, uploaded_file
from ui.config.limits import ApprovalMode  # one list: the setting's, the API's (the library's, tested)
from ui.services import Services
from ui.web.gradio_callers import describe_api, oauth_of

Action = Literal["approve", "reject", "edit", "answer"]
#: The API's endpoints (what `hide_from_api` keeps).
API_NAMES = ("ask", "decide", "stop_run", "list_chats", "chat_files")


class FileRef(TypedDict):
    name: str  # its path in the chat's folder
    url: str  # its published copy (absolute)
    bytes: int


class PendingDecision(TypedDict):
    id: str  # what /decide takes as decision_id
    kind: str  # plan, code, tool_call or question
    details: dict[str, Any]  # the plan, the code, the tool and its arguments, or the question


class AnswerCheckDict(TypedDict):
    verdict: str  # unsure (the app cannot stand behind the answer), unchecked or agreed
    passed: list[str]  # the checks the answer passed
    problems: list[str]  # why the app is not sure of it
    advice: str  # how to get a better answer (a capable model)


class TaskResult(TypedDict):
    chat_id: str
    status: str  # finished, out_of_steps, stopped, failed, needs_decision or not_started
    answer: str
    note: str
    steps: int
    decision: PendingDecision | None
    check: AnswerCheckDict | None
    files: list[FileRef]


class ChatInfo(TypedDict):
    chat_id: str
    title: str
    updated: float  # seconds since the epoch
    steps: int


RESULT_DOC = ("chat_id (the chat, for follow-ups), status (finished, out_of_steps, stopped, failed, needs_decision, "
              "not_started), answer (Markdown; file names linked to absolute URLs), note (why it failed or did not "
              "start, or that the app is not sure of the answer), steps, check (what the app checked of the embedded "
              "model's answer: verdict unsure, unchecked or agreed, with its problems and advice; null when not "
              "checked), decision (when status is needs_decision: its id, kind and details), files (each with "
              "name, url, bytes)")


class ApiEndpoints:
    """The endpoint functions: each finds its caller, calls the service, and says a refusal as a gr.Error."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.chats = ApiChats(services)

    def caller(self, request: gr.Request, hf_token: str = "") -> ApiCaller:
        profile, token = oauth_of(request) if self.services.config.hf_login else (None, None)
        if token is None and isinstance(hf_token, str) and hf_token.strip():  # the caller's own, for hf: models
            token = gr.OAuthToken(token=hf_token.strip(), scope="", expires_at=0)
        return identify(request, self.services.store, profile, token)

    def ask(self, task: str, request: gr.Request, files: list[FileData] | None = None, chat_id: str = "",
            approval_mode: ApprovalMode = "autonomous", model: str = "", max_steps: int | None = None,
            hf_token: str = "") -> TaskResult:
        """Run the agent on a task in a new chat of yours, or go on in one of your chats (chat_id), and wait for
        its answer or for a decision it asks of you (answer that with /decide)."""
        try:
            caller = self.caller(request, hf_token)
            sent = [uploaded_file(_field(item, "path"), _field(item, "orig_name")) for item in files or []]
            return self.chats.run_task(caller, task, sent, chat_id or "", approval_mode, model or "",  # type: ignore[return-value]
                                       max_steps)
        except ApiRefused as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    def decide(self, chat_id: str, decision_id: str, action: Action, request: gr.Request, text: str = "") -> TaskResult:
        """Answer the decision a run of yours waits for, then wait for its answer (or its next decision)."""
        try:
            return self.chats.decide(self.caller(request), chat_id, decision_id, action, text)  # type: ignore[return-value]
        except ApiRefused as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    def stop_run(self, chat_id: str, request: gr.Request) -> bool:
        """Stop the run going on in one of your chats (its steps so far are kept)."""
        try:
            return self.chats.stop(self.caller(request), chat_id)
        except ApiRefused as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    def list_chats(self, request: gr.Request) -> list[ChatInfo]:
        """Your saved chats, newest first, with the ids the other endpoints take."""
        return self.chats.list_chats(self.caller(request))  # type: ignore[return-value]

    def chat_files(self, chat_id: str, request: gr.Request) -> list[FileRef]:
        """The files of one of your chats (your uploads and what the agent wrote), each with its URL."""
        try:
            return self.chats.chat_files(self.caller(request), chat_id)  # type: ignore[return-value]
        except ApiRefused as exc:
            raise gr.Error(str(exc), print_exception=False) from None


def _field(item: Any, name: str) -> Any:
    """A field of a file as the client sent it (a dict from gradio_client; FileData in a direct call)."""
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def wire(blocks: gr.Blocks, services: Services) -> ApiEndpoints:
    """Register the endpoints (inside `blocks`, before the page's own events: Gradio gives a later event with a
    name already taken another, and the page's handlers are named after their functions, `ask` among them)."""
    taken = sorted(name for fn in blocks.fns.values() if (name := fn.api_name) in API_NAMES)
    if taken:  # Gradio would rename ours ("ask_1"), and the README's calls would reach the page's events
        raise RuntimeError(f"Events named {taken} came before the API's: wire the API first (ui/layout.py).")
    endpoints = ApiEndpoints(services)
    config = services.config
    runs: dict[str, Any] = dict(concurrency_limit=config.max_runs, concurrency_id="runs")
    quick: dict[str, Any] = dict(concurrency_limit=None)
    chat_id_doc = "the id of one of your chats, as /list_chats or a result gives it"
    gr.api(endpoints.ask, api_name="ask", **runs)
    describe_api(blocks, "ask", {
        "task": "what the agent should do",
        "files": "files for the agent, uploaded with the call (gradio_client: [handle_file(path)])",
        "chat_id": "empty for a new chat, or the id of one of your chats to go on in it (its memory and files)",
        "approval_mode": "which steps wait for your decision (autonomous: none)",
        "model": "a model this server offers (empty: the server's default, or the chat's own)",
        "max_steps": "at most this many steps (empty: the server's default)",
        "hf_token": "your Hugging Face token, for hf: models on a server without a token of its own (never kept)",
    }, [("result", RESULT_DOC)])
    gr.api(endpoints.decide, api_name="decide", **runs)
    describe_api(blocks, "decide", {
        "chat_id": chat_id_doc,
        "decision_id": "the id of the decision, from the result that asked for it",
        "action": "approve; reject (text: why); edit (text: the new plan or code, or a tool call's arguments as "
                  "JSON); answer (text: your answer to the agent's question)",
        "text": "the reason, the edit or the answer",
    }, [("result", RESULT_DOC)])
    gr.api(endpoints.stop_run, api_name="stop_run", **quick)
    describe_api(blocks, "stop_run", {"chat_id": chat_id_doc},
                 [("stopping", "true if a run was going on and is stopped")])
    gr.api(endpoints.list_chats, api_name="list_chats", **quick)
    describe_api(blocks, "list_chats", {},
                 [("chats", "each chat's chat_id, title, updated (seconds since the epoch) and steps, newest first")])
    gr.api(endpoints.chat_files, api_name="chat_files", **quick)
    describe_api(blocks, "chat_files", {"chat_id": chat_id_doc},
                 [("files", "each file's name (its path in the chat's folder), url and bytes")])
    return endpoints
