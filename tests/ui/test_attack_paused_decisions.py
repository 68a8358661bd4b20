"""Attacks on paused decisions (issue 28: a run waiting for a person's approval has ended, its pending request saved
with the chat; the answer starts a resumed run, on whichever replica holds the chat). Two replicas are two apps on
one data folder and one Redis (a real redis-server on loopback), as two processes behind a proxy; the code the
agent proposes appends a line to `ran.txt` in the chat's workspace, so a test counts how often it really ran in
the sandbox (the local backend's worker).

Tried as a visitor would: another owner answering or reading a decision by its id, two tabs or replicas answering
at once, an answer replayed after the run resumed, an answer after the run was stopped on another replica, a
tampered saved pending record, and answers far over the message limit."""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from shared_servers import redis_url  # noqa: F401 (fixture)
from ui_testlib import Req, chat_text, code_reply, write_transcript
from ui_testlib import form as settings_form

from ui.app import AgentDeckApp
from ui.panels.approval_panel import VIEW_KEYS
from ui.panels.approvals import ApprovalHandlers
from ui.panels.history import HistoryController
from ui.saved.store import ChatStoreError, new_token
from ui.settings import AppConfig

CODE = "print('EXEC' + 'UTED')\nopen('ran.txt', 'a').write('ran\\n')\nfinal_answer('done')"
SCRIPT = [code_reply("Write the mark.", CODE)]


class Replica:
    """One app process's controllers on the shared data folder and Redis."""

    def __init__(self, tmp_path: Path, redis: str, script: list[str] | None = None, tools: tuple[str, ...] = (),
                 **config: Any) -> None:
        self.tools = list(tools)
        transcript = write_transcript(tmp_path / "script.json", script or SCRIPT)
        self.config = AppConfig(model=f"replay:{transcript}", data_dir=tmp_path / "data", authorized_imports=(),
                                max_steps=3, redis_url=redis, runs_per_minute=10_000, runs_at_once=10_000,
                                **config)
        self.app = AgentDeckApp(self.config)
        self.history = HistoryController(self.app.services)
        self.approvals = ApprovalHandlers(self.app.services)

    def form(self) -> dict[str, Any]:
        return settings_form(self.config.model, tools=self.tools) if self.tools else settings_form(self.config.model)

    def load(self, token: str, tab: str, chat_id: str | None = None) -> None:
        list(self.history.on_load({"token": token}, Req(tab), **self.form()))
        if chat_id is not None:
            list(self.history.open_chat({"token": token}, chat_id, Req(tab), **self.form()))

    def send(self, tab: str, text: str, mode: str = "approve_code") -> None:
        list(self.app.run({"text": text, "files": []}, Req(tab), mode, **self.form()))

    def view(self, tab: str) -> dict[str, Any]:
        return dict(zip(VIEW_KEYS, self.approvals.refresh(None, Req(tab)), strict=True))

    def approve(self, tab: str, shown: str | None, code: str = CODE, args: str = "") -> dict[str, Any]:
        answered = dict(zip(VIEW_KEYS, self.approvals.approve(shown, code, args, Req(tab)), strict=True))
        list(self.approvals.resume(Req(tab)))
        return answered

    def chat_id(self, tab: str) -> str:
        return str(self.app.registry.peek(tab).record.saved.id)


@pytest.fixture
def replicas(tmp_path: Path, redis_url: str):  # type: ignore[no-untyped-def]  # noqa: F811
    from ui.shared.state_redis import RedisState

    RedisState(redis_url).client.flushdb()
    made = [Replica(tmp_path, redis_url) for _ in range(2)]
    yield made
    for replica in made:
        replica.app.registry.shutdown()


def runs(replica: Replica, tab: str) -> int:
    """How many times the proposed code really ran in the sandbox (lines it appended to the workspace file)."""
    path = replica.app.registry.peek(tab).record.saved.workspace / "ran.txt"
    return path.read_text().count("ran") if path.exists() else 0


def message(answered: dict[str, Any]) -> str:
    value = answered["message"]
    return str(value.get("value", "") if isinstance(value, dict) else value)


def paused_on_a_opened_on_b(replicas: list[Replica]) -> tuple[Replica, Replica, str, str]:
    """The owner's run paused on replica a (tab-a); the same owner opened the chat on replica b (tab-b), which
    shows the decision. Returns the replicas, the token and the request's id."""
    a, b = replicas
    token = new_token()
    a.load(token, "tab-a")
    a.send("tab-a", "Write the mark")
    shown = a.view("tab-a")["request_id"]
    assert shown and a.app.registry.peek("tab-a").pending_request() is not None
    b.load(token, "tab-b", a.chat_id("tab-a"))
    assert b.view("tab-b")["request_id"] == shown
    return a, b, token, shown


def test_another_owner_can_neither_see_nor_answer_a_decision_by_its_id(replicas) -> None:
    a, b = replicas
    a.load(new_token(), "victim")
    a.send("victim", "Write the mark")
    shown = a.view("victim")["request_id"]
    for replica, tab in ((a, "attacker"), (b, "attacker-b")):  # another owner, on this replica and the other
        replica.load(new_token(), tab, a.chat_id("victim"))  # opening the victim's chat by its id finds nothing
        assert replica.view(tab)["request_id"] in ("", None)
        answered = replica.approve(tab, shown)
        assert "already made or has expired" in message(answered)
        rejected = dict(zip(VIEW_KEYS, replica.approvals.reject(shown, "no", Req(tab)), strict=True))
        assert "already made or has expired" in message(rejected)
    assert runs(a, "victim") == 0 and a.app.registry.peek("victim").pending_request().request_id == shown
    a.approve("victim", shown)
    assert runs(a, "victim") == 1  # the owner's own answer still works


def test_two_replicas_answering_at_once_run_the_code_once(replicas) -> None:
    a, b, _, shown = paused_on_a_opened_on_b(replicas)
    barrier = threading.Barrier(2)
    answers: dict[str, dict[str, Any]] = {}

    def answer(replica: Replica, tab: str) -> None:
        barrier.wait()
        answers[tab] = replica.approve(tab, shown)

    threads = [threading.Thread(target=answer, args=(r, t)) for r, t in ((a, "tab-a"), (b, "tab-b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    # Counted in each replica's chat (its printed line): the replicas' workers share the test's one data folder,
    # each with its own user id, so a second run could not append to the file the first one made.
    executed = [tab for replica, tab in ((a, "tab-a"), (b, "tab-b")) if "EXECUTED" in chat_text(
        replica.app.registry.peek(tab).record.transcript.messages())]
    assert len(executed) == 1 and runs(a, "tab-a") == 1, (executed, {t: message(x) for t, x in answers.items()})
    # A replay of the same answer on either replica, after the run resumed, runs nothing again.
    for replica, tab in ((a, "tab-a"), (b, "tab-b")):
        replica.approve(tab, shown)
    assert runs(a, "tab-a") == 1


def test_a_decision_stopped_on_one_replica_is_not_run_by_the_other(replicas) -> None:
    """The person stops the paused run in one tab (replica a); the other tab (replica b), which opened the chat
    while it waited, still shows the request from the memory it loaded then. Its approval must not run what
    was stopped: before the fix it resumed b's stale copy and the code ran."""
    a, b, _, shown = paused_on_a_opened_on_b(replicas)
    assert a.app.stop(Req("tab-a")) == "<small>stopping…</small>"
    answered = b.approve("tab-b", shown)
    assert runs(a, "tab-a") == 0, message(answered)
    assert message(answered), "the refusal is said in the panel"
    memory, _ = a.app.services.store.load_memory(a.app.registry.peek("tab-a").record.saved)
    assert memory.pending is None and "ran" not in chat_text(b.app.registry.peek("tab-b").record.transcript.messages())


def test_a_pending_record_changed_on_disk_is_refused_as_a_whole(replicas) -> None:
    """The saved pending request is inside the signed memory: a store that hands back a changed one (the proposed
    code swapped, the run's own policy turned to run-anything) is refused, nothing of it is shown or run."""
    a, b = replicas
    token = new_token()
    a.load(token, "tab-a")
    a.send("tab-a", "Write the mark")
    saved = a.app.registry.peek("tab-a").record.saved
    path = Path(saved.folder) / "memory.json"
    envelope = json.loads(path.read_text())
    pending = envelope["document"]["memory"]["pending"] if "memory" in envelope["document"] else \
        envelope["document"]["pending"]
    pending["payload"]["code"] = "open('ran.txt', 'a').write('swapped\\n')"
    pending["policy"] = None
    path.write_text(json.dumps(envelope))
    with pytest.raises(ChatStoreError, match="signature does not match"):
        b.app.services.store.load_memory(b.app.services.store.get(saved.owner, saved.id))
    b.load(token, "tab-b", saved.id)
    assert b.view("tab-b")["request_id"] in ("", None)


@pytest.mark.parametrize("kind", ["edited code", "reject reason"])
def test_an_answer_far_over_the_message_limit_is_refused_and_nothing_runs(tmp_path: Path, redis_url: str,  # noqa: F811
                                                                           kind: str) -> None:
    """A decision's texts (an edited code, a rejection's reason, a question's answer) go into the chat's memory and
    every later prompt, as a message does: they are held to the same limit (AGENTDECK_MAX_MESSAGE_CHARS)."""
    from ui.shared.state_redis import RedisState

    RedisState(redis_url).client.flushdb()
    replica = Replica(tmp_path, redis_url, max_message_chars=1000)
    try:
        replica.load(new_token(), "tab")
        replica.send("tab", "Write the mark")
        shown = replica.view("tab")["request_id"]
        huge = "#" + "x" * 5000 + "\n" + CODE
        if kind == "edited code":
            answered = replica.approve("tab", shown, huge)
        else:
            answered = dict(zip(VIEW_KEYS, replica.approvals.reject(shown, huge, Req("tab")), strict=True))
        assert "too long" in message(answered), message(answered)
        session = replica.app.registry.peek("tab")
        assert runs(replica, "tab") == 0 and session.pending_request() is not None
        memory = session.agent.memory
        assert "x" * 2000 not in json.dumps([step.__dict__ for step in memory.steps], default=str)
    finally:
        replica.app.registry.shutdown()


def test_the_api_holds_a_decisions_texts_to_the_message_limit_and_its_kind_to_the_request(
        tmp_path: Path, redis_url: str) -> None:  # noqa: F811
    """The same through the HTTP API's `decide` (ui/api/chats.py, and so the MCP server's, which share
    ui/chat_service.py): an edit or a reason over the limit is refused with nothing run, an answer that does not
    fit the request's kind (an 'answer' to code) is refused, and the decision still waits for the owner."""
    from ui.api.caller import ApiCaller
    from ui.api.chats import ApiChats, ApiRefused
    from ui.shared.state_redis import RedisState

    RedisState(redis_url).client.flushdb()
    replica = Replica(tmp_path, redis_url, max_message_chars=1000)
    try:
        api = ApiChats(replica.app.services)
        caller = ApiCaller(owner=replica.app.services.store.owner_for_token(new_token()), visitor="api-visitor",
                           request=Req("api-tab"))
        paused = api.run_task(caller, "Write the mark", approval_mode="approve_code")
        assert paused["status"] == "needs_decision", paused
        chat_id, request_id = paused["chat_id"], paused["decision"]["id"]
        huge = "#" + "x" * 5000 + "\n" + CODE
        for action in ("edit", "reject"):
            with pytest.raises(ApiRefused, match="too long"):
                api.decide(caller, chat_id, request_id, action, huge)
        with pytest.raises(ApiRefused, match="not an answer"):
            api.decide(caller, chat_id, request_id, "answer", "yes")
        stranger = ApiCaller(owner=replica.app.services.store.owner_for_token(new_token()), visitor="other",
                             request=Req("other-tab"))
        with pytest.raises(ApiRefused, match="No chat of yours"):
            api.decide(stranger, chat_id, request_id, "approve")
        workspace = replica.app.services.store.get(caller.owner, chat_id).workspace
        assert not (workspace / "ran.txt").exists()
        done = api.decide(caller, chat_id, request_id, "approve")
        assert done["status"] == "finished" and (workspace / "ran.txt").read_text() == "ran\n", done
        with pytest.raises(ApiRefused, match="no pending decision"):  # replayed: nothing runs again
            api.decide(caller, chat_id, request_id, "approve")
        assert (workspace / "ran.txt").read_text() == "ran\n"
    finally:
        replica.app.registry.shutdown()


def test_a_decision_stopped_through_the_api_is_not_run_by_the_owners_tab(replicas) -> None:
    """The same stale copy on one replica: the owner's page tab shows the paused decision; their API client
    opens the chat (its own session, the memory loaded again) and stops the run there. The tab's approval,
    answered from the memory it had, must not run the stopped code."""
    from ui.api.caller import ApiCaller
    from ui.api.chats import ApiChats, ApiRefused

    a, _ = replicas
    token = new_token()
    a.load(token, "tab")
    a.send("tab", "Write the mark")
    shown = a.view("tab")["request_id"]
    api = ApiChats(a.app.services)
    caller = ApiCaller(owner=a.app.services.store.owner_for_token(token), visitor="api", request=Req("api"))
    with pytest.raises(ApiRefused, match="action must be"):  # reopens the paused chat in the API's session
        api.decide(caller, a.chat_id("tab"), shown, "maybe")
    assert api.stop(caller, a.chat_id("tab")) is True
    answered = a.approve("tab", shown)
    assert runs(a, "tab") == 0, message(answered)
    assert "stopped" in message(answered) or "already made" in message(answered)


def test_a_decision_of_a_chat_deleted_on_another_replica_is_not_answered(replicas) -> None:
    a, b, token, shown = paused_on_a_opened_on_b(replicas)
    saved = a.app.registry.peek("tab-a").record.saved
    assert a.app.services.store.delete(saved.owner, saved.id)
    answered = b.approve("tab-b", shown)
    assert runs(b, "tab-b") == 0 and "deleted" in message(answered), message(answered)


MAIL_CODE = "sent = send_email(to='team@example.com', body='hello')\nfinal_answer(sent)"
DEEP = '{"to": "x@example.com", "body": ' + '{"a": ' * 900 + '"b"' + '}' * 900 + '}'
MALFORMED_ARGS = {"an object, not text": {"to": "x@example.com", "body": "hi"}, "a list": ["x@example.com"],
                  "nested past the parser": "[" * 3000 + "]" * 3000, "nested 900 deep": DEEP}


@pytest.fixture
def mail_replica(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    from ui_testlib import MAIL_TOOLS

    from ui import tool_offer

    (tmp_path / "mail_tools.py").write_text(MAIL_TOOLS)
    monkeypatch.setenv("AGENTDECK_TOOLS_PATH", str(tmp_path / "mail_tools.py"))
    monkeypatch.setattr(tool_offer, "_TOOL_CACHE", None)  # the registry again, with the mail tool
    replica = Replica(tmp_path, "", [code_reply("Mail the team.", MAIL_CODE)], tools=("send_email",))
    yield replica, tmp_path / "outbox.txt"
    replica.app.registry.shutdown()


def test_malformed_tool_arguments_are_refused_clearly_and_nothing_is_sent(mail_replica) -> None:
    """An edited tool call's arguments as a visitor may send them to the page's handler or the API (any JSON
    value, text nested past what the parser or the saved memory can take): each a refusal that says what to
    fix, the decision still waiting; then the owner's plain approval sends the mail once."""
    from ui.api.caller import ApiCaller
    from ui.api.chats import ApiChats, ApiRefused

    replica, outbox = mail_replica
    token = new_token()
    replica.load(token, "tab")
    replica.send("tab", "Mail the team", mode="approve_tools")
    view = replica.view("tab")
    shown = view["request_id"]
    assert shown and "send_email" in str(view["tool_name"]), view
    api = ApiChats(replica.app.services)
    caller = ApiCaller(owner=replica.app.services.store.owner_for_token(token), visitor="api", request=Req("api"))
    for name, args in MALFORMED_ARGS.items():
        answered = dict(zip(VIEW_KEYS, replica.approvals.approve(shown, "", args, Req("tab")), strict=True))
        assert "⚠️" in message(answered), (name, message(answered))
        if name != "an object, not text":  # the API's text: a JSON object there is an edit like any other
            with pytest.raises(ApiRefused, match="JSON object|nest deeper"):
                api.decide(caller, replica.chat_id("tab"), shown, "edit", args if isinstance(args, str) else
                           json.dumps(args))
    assert not outbox.exists() and replica.app.registry.peek("tab").pending_request().request_id == shown
    answered = replica.approve("tab", shown, "", json.dumps({"to": "team@example.com", "body": "hello"}))
    assert outbox.read_text() == "team@example.com: hello\n", message(answered)


def test_an_edit_no_longer_than_the_agents_proposal_passes_a_small_message_limit(tmp_path: Path) -> None:
    """The limit is on what a person adds: the agent's own code may be longer than a message, and an edit of it
    that adds nothing past its length is taken (and runs as edited)."""
    replica = Replica(tmp_path, "", max_message_chars=20)
    try:
        replica.load(new_token(), "tab")
        replica.send("tab", "Write the mark")
        shown = replica.view("tab")["request_id"]
        assert len(CODE) > 20
        answered = replica.approve("tab", shown, CODE.replace("write('ran", "write('RAN"))
        path = replica.app.registry.peek("tab").record.saved.workspace / "ran.txt"
        assert path.exists() and path.read_text() == "RAN\n", message(answered)
    finally:
        replica.app.registry.shutdown()


def test_after_a_restart_without_the_tool_an_approved_call_sends_nothing(mail_replica, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The operator takes the tool away and restarts while a call of it waits for approval: the owner's approval
    (of the call as it was asked) reaches no tool, and the chat says why, not a crash."""
    from ui import tool_offer

    replica, outbox = mail_replica
    token = new_token()
    replica.load(token, "tab")
    replica.send("tab", "Mail the team", mode="approve_tools")
    shown = replica.view("tab")["request_id"]
    chat_id = replica.chat_id("tab")
    replica.app.registry.shutdown()
    monkeypatch.delenv("AGENTDECK_TOOLS_PATH")
    monkeypatch.setattr(tool_offer, "_TOOL_CACHE", None)
    again = Replica(tmp_path, "", [code_reply("Mail the team.", MAIL_CODE)], tools=("send_email",))
    try:
        again.load(token, "tab2", chat_id)
        answered = again.approve("tab2", shown, "", json.dumps({"to": "team@example.com", "body": "hello"}))
        assert not outbox.exists(), message(answered)
        shown_chat = chat_text(again.app.registry.peek("tab2").record.transcript.messages())
        assert "name 'send_email' is not defined" in shown_chat, shown_chat[-800:]  # the approved step ran, toolless
    finally:
        again.app.registry.shutdown()


#: Each resumed run leaves its own file (the two replicas' workers share the test's one data folder, each with its
#: own user id: one could not append to a file the other made).
ASK_CODE = "colour = ask_user('Which colour?')\nopen('ran-' + colour + '.txt', 'w').write('ran')\nfinal_answer(colour)"


def answered(replica: Replica, tab: str) -> list[str]:
    """The answers whose resumed run really ran the rest of the code in a sandbox."""
    return sorted(p.name for p in replica.app.registry.peek(tab).record.saved.workspace.glob("ran-*.txt"))


def question_on_a_opened_on_b(tmp_path: Path, redis: str) -> tuple[Replica, Replica]:
    """A run paused on the agent's question (asked from its code) on replica a; the owner opened the chat on b."""
    from ui.shared.state_redis import RedisState

    RedisState(redis).client.flushdb()
    a, b = (Replica(tmp_path, redis, [code_reply("Ask.", ASK_CODE)]) for _ in range(2))
    token = new_token()
    a.load(token, "tab-a")
    a.send("tab-a", "Ask me", mode="autonomous")
    pending = a.app.registry.peek("tab-a").pending_request()
    assert pending is not None and pending.request_kind == "question"
    b.load(token, "tab-b", a.chat_id("tab-a"))
    assert b.app.registry.peek("tab-b").pending_request().request_id == pending.request_id
    return a, b


def test_a_question_stopped_on_one_replica_is_not_answered_by_a_message_on_the_other(
        tmp_path: Path, redis_url: str) -> None:  # noqa: F811
    """The answer to the agent's question is the person's next message, not a panel button: the same stale copy
    on the other replica must not resume the stopped run through the message box either."""
    a, b = question_on_a_opened_on_b(tmp_path, redis_url)
    try:
        assert a.app.stop(Req("tab-a")) == "<small>stopping…</small>"
        b.send("tab-b", "teal", mode="autonomous")
        assert answered(a, "tab-a") == [], chat_text(b.app.registry.peek("tab-b").record.transcript.messages())[-600:]
    finally:
        a.app.registry.shutdown()
        b.app.registry.shutdown()


def test_a_question_answered_by_messages_on_two_replicas_at_once_resumes_once(tmp_path: Path,
                                                                             redis_url: str) -> None:  # noqa: F811
    a, b = question_on_a_opened_on_b(tmp_path, redis_url)
    try:
        barrier = threading.Barrier(2)

        def answer(replica: Replica, tab: str, colour: str) -> None:
            barrier.wait()
            replica.send(tab, colour, mode="autonomous")

        threads = [threading.Thread(target=answer, args=args) for args in ((a, "tab-a", "teal"), (b, "tab-b", "red"))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert len(answered(a, "tab-a")) == 1, answered(a, "tab-a")
    finally:
        a.app.registry.shutdown()
        b.app.registry.shutdown()


class ServerKilled(OSError):
    """What the store sees of a server killed mid-run: nothing it would have saved after that arrives."""


def test_a_crash_after_the_approved_code_ran_does_not_offer_the_decision_again(tmp_path: Path) -> None:
    """Attack review, issue 28: the approved step's code ran, then the server died before the step's save; the
    restarted server reopened the chat with the request still pending and offered it again, and approving it
    ran the code a second time. Now the request is saved as taken before the step acts: the reopened chat says
    the run stopped after the approval (its code may have run) and offers nothing; the code ran once."""
    first = Replica(tmp_path, "")  # one server, no Redis: nothing but the saved chat survives its death
    token = new_token()
    first.load(token, "tab")
    first.send("tab", "Write the mark")
    shown = first.view("tab")["request_id"]
    assert shown
    chat_id = first.chat_id("tab")
    list(first.approvals.approve(shown, CODE, "", Req("tab")))  # type: ignore[arg-type]  # the click: taken
    store = first.app.services.store

    def killed(*args: Any, **kwargs: Any) -> None:
        raise ServerKilled("the server was killed")

    store.save_memory = killed  # type: ignore[method-assign]  # from here on, as if the process had died
    list(first.approvals.resume(Req("tab")))  # type: ignore[arg-type]  # the approved code runs; no save arrives
    assert runs(first, "tab") == 1
    first.app.registry.shutdown()

    restarted = Replica(tmp_path, "")  # the server again, on the same data folder
    try:
        restarted.load(token, "tab2", chat_id)
        session = restarted.app.registry.peek("tab2")
        assert session is not None
        assert session.pending_request() is None and restarted.view("tab2")["request_id"] in ("", None)
        text = chat_text(session.record.transcript.messages())
        assert "stopped after you approved this step; its code may have run" in text, text
        answered = restarted.approve("tab2", shown)  # a stale panel's answer: refused, nothing runs
        assert "already made or has expired" in message(answered)
        assert runs(restarted, "tab2") == 1
        restarted.send("tab2", "Go on")  # the person continues: the message is taken, not held for a decision
        text = chat_text(session.record.transcript.messages())
        assert "waiting for your decision" not in text and text.count("Go on") == 1, text
    finally:
        restarted.app.registry.shutdown()
