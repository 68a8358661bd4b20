"""A saved chat's sandbox across two app instances sharing one chat store (issue 28), on the E2B backend against its
loopback stand-in (its sandbox processes in containers of the sandbox image): the chat reopened on instance B
attaches the sandbox instance A started (its variables there, nothing re-run, no sandbox created); a tampered or
another chat's record is refused and the variables rebuilt (the other chat's sandbox untouched); a sandbox gone
meanwhile is rebuilt with a clear note. Each instance is its own `ChatStore` and `E2BBackend` (nothing shared but
the store's folder and the service), and a chat is reopened through `Session.reopen`/`restore_agent`, the path
the page and the API take (ui/panels/history.py, ui/api/chats.py)."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("e2b")

from shared_servers import redis_url  # noqa: F401 (fixture)

from agents import CodeAgent, ReplayModel
from agents.executor.docker import daemon
from agents.executor.e2b.backend import E2BBackend
from agents.executor.errors import SandboxError
from tests.executor.e2b_standin import E2BStandIn
from tests.waiting import wait_until
from ui.saved import sandbox_record
from ui.saved.store import ChatStore, new_token
from ui.session.sandbox_keep import KEPT_NOTE
from ui.session.session import Session

WHY_NOT = daemon.reachable()
pytestmark = [pytest.mark.docker, pytest.mark.skipif(WHY_NOT is not None, reason=f"no Docker Engine: {WHY_NOT}")]
SECRET = b"reattach-test-secret-0123456789abcdef"
HOLD_TTL_S = 1.0
SET_X = "Thought: Set x.\n```python\nx = 41\nprint('x is set')\n```"
ANSWER = "Thought: Answer.\n```python\nfinal_answer(x + 1)\n```"


@pytest.fixture(scope="module")
def runner() -> Any:
    from tests.executor.e2b_standin_docker import DockerRunner

    return DockerRunner()


@pytest.fixture
def standin(runner: Any) -> Any:
    service = E2BStandIn(runner=runner)
    yield service
    service.close()


class Instance:
    """One app instance: its own chat store object (on the shared folder) and its own E2B backend object."""

    def __init__(self, name: str, data: Path, standin: Any, holds: Any) -> None:
        self.name = name
        self.store = ChatStore(data, secret=SECRET)
        # Holds in the lease store every instance shares (a real redis-server), with a short expiry: a "dead"
        # instance's holds run out within a second.
        self.backend = E2BBackend(standin.settings(), holds=holds, hold_ttl_s=HOLD_TTL_S)
        self.sessions: list[Session] = []

    def factory(self, settings: Any, workspace: Path) -> CodeAgent:
        return CodeAgent(model=ReplayModel([SET_X, ANSWER] * 3), workdir=workspace, max_steps=4, verbosity=0,
                         sandbox=self.backend, executor_timeout_s=30)

    def session(self, chat: Any) -> Session:
        session = Session(f"{self.name}-{len(self.sessions)}", chat.folder, self.factory, 2**20, saved=chat)
        self.sessions.append(session)
        return session

    def set_x(self, owner: str) -> tuple[Any, Session]:
        """A chat whose run set x in its sandbox, saved (and its sandbox recorded) as the app saves a run."""
        chat = self.store.create(owner)
        session = self.session(chat)
        session.record.add_turn("Set x", "Set x", [])
        agent = self.factory(None, chat.workspace)
        session.use_agent(agent, None)
        assert agent.run("Set x") == 42
        assert session.save_chat("run")
        return chat, session

    def reopen(self, owner: str, chat_id: str) -> Session:
        chat = self.store.get(owner, chat_id)
        assert chat is not None
        memory, metadata = self.store.load_memory(chat)
        session = self.session(chat)
        assert session.record.reopen(memory, metadata.get("turns") or [])
        session.restore_agent(memory, None)  # type: ignore[arg-type]
        return session

    def close(self) -> None:
        for session in self.sessions:
            session.close()


def notes(session: Session) -> str:
    return "\n".join(str(root.parts.get("text", "")) for root in session.record.transcript.roots)


def creates(standin: Any) -> int:
    return len([call for call in standin.calls("POST", "/v2/sandboxes") if call[1].rstrip("/") == "/v2/sandboxes"])


def x_plus_one(session: Session) -> str:
    return session.agent.sandbox.run("print(x + 1)").logs.strip()


@pytest.fixture
def holds(redis_url: str) -> Any:  # noqa: F811
    from ui.shared.state_redis import RedisState

    state = RedisState(redis_url)
    state.client.flushdb()
    return state


@pytest.fixture
def instances(tmp_path: Path, standin: Any, holds: Any) -> Any:
    a, b = Instance("a", tmp_path / "data", standin, holds), Instance("b", tmp_path / "data", standin, holds)
    yield a, b
    b.close()
    a.close()


def dies(session: Session, holds: Any) -> None:
    """The instance that holds the session's sandbox stops (killed, or cut off): its hold is no longer renewed,
    and it runs out. Its session object stays, as a stalled replica's would."""
    host = session.agent.sandbox.host
    hold = getattr(host, "hold", None)
    if hold is None:  # code from before the holds: nothing to wait for
        return
    hold.abandoned = True
    wait_until(lambda: holds.lease_get(hold.name) is None, 10, "the dead instance's hold to run out")


def test_a_chat_reopened_on_another_instance_attaches_its_sandbox_with_its_variables(instances: Any,
                                                                                       standin: Any) -> None:
    a, b = instances
    owner = a.store.owner_for_token(new_token())
    chat, first = a.set_x(owner)
    (sandbox_id,) = standin.sandboxes
    assert sandbox_record.read(chat) == sandbox_record.SandboxRef("e2b", sandbox_id)
    made = creates(standin)

    dies(first, a.backend.holds)  # A stops (the failover case): B may take the sandbox once A's hold ran out
    second = b.reopen(owner, chat.id)
    assert KEPT_NOTE in notes(second) and "Re-ran" not in notes(second)
    assert creates(standin) == made and standin.calls("POST", f"/v2/sandboxes/{sandbox_id}/connect")
    assert x_plus_one(second) == "42"  # the variable set on instance A, in the sandbox A started

    first.close()  # A's session ends late: B holds the sandbox now, so A lets it go instead of killing it
    assert standin.live() == [sandbox_id] and x_plus_one(second) == "42"
    second.close()  # closing on purpose still kills it, and the chat forgets it
    assert standin.live() == [] and sandbox_record.read(chat) is None


def test_a_tampered_or_another_chats_record_is_refused_and_the_variables_rebuilt(instances: Any,
                                                                                   standin: Any) -> None:
    a, b = instances
    owner, stranger = a.store.owner_for_token(new_token()), a.store.owner_for_token(new_token())
    chat, _ = a.set_x(owner)
    theirs, their_session = a.set_x(stranger)
    their_id = sandbox_record.read(theirs).id
    their_session.agent.sandbox.run("x = 1000")

    # The record's id changed to the other chat's sandbox: its signature no longer holds.
    path = chat.folder / "sandbox.json"
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "id": their_id}))
    made = creates(standin)
    reopened = b.reopen(owner, chat.id)
    text = notes(reopened)
    assert "record did not check out" in text and "Re-ran 2 recorded code steps" in text, text
    assert creates(standin) == made + 1 and x_plus_one(reopened) == "42"  # rebuilt in a new sandbox

    # A record signed for this chat (as the server would) that names the other chat's sandbox: its owner differs.
    sandbox_record.record(chat, sandbox_record.SandboxRef("e2b", their_id))
    again = b.reopen(owner, chat.id)
    assert "belongs to another chat" in notes(again) and x_plus_one(again) == "42"
    assert their_id in standin.live()  # the other chat's sandbox is untouched, its variable as it was
    assert their_session.agent.sandbox.run("print(x)").logs.strip() == "1000"


def test_a_sandbox_gone_meanwhile_is_rebuilt_with_a_clear_note(instances: Any, standin: Any) -> None:
    a, b = instances
    owner = a.store.owner_for_token(new_token())
    chat, _ = a.set_x(owner)
    gone = sandbox_record.read(chat).id
    standin.vanish(gone)  # ended at the service (its lifetime ran out, or the app that had it was killed)
    reopened = b.reopen(owner, chat.id)
    text = notes(reopened)
    assert "could not be used again (it has ended)" in text and "Re-ran 2 recorded code steps" in text, text
    assert x_plus_one(reopened) == "42"
    assert reopened.save_chat("run")
    assert sandbox_record.read(chat).id not in (None, gone)  # the new sandbox is the chat's now
    assert os.path.isdir(chat.workspace)


def test_a_second_tab_on_the_same_instance_never_shares_the_first_tabs_sandbox(instances: Any, standin: Any) -> None:
    """The sandbox is live in this process for another session: two sessions would drive one worker, and the first
    one's close would kill the second's. The second tab rebuilds in a sandbox of its own."""
    a, _ = instances
    owner = a.store.owner_for_token(new_token())
    chat, first = a.set_x(owner)
    second = a.reopen(owner, chat.id)
    assert "in use in another open tab" in notes(second) and x_plus_one(second) == "42"
    assert second.agent.sandbox.host is not first.agent.sandbox.host
    first.close()
    assert x_plus_one(second) == "42"


def test_taking_the_chat_back_attaches_the_sandbox_back(instances: Any, standin: Any) -> None:
    """A's tab takes the chat over again after B attached its sandbox (A had stopped, then B did): A reopens it
    and attaches the sandbox back from B, variables and all; B's late close then lets it go."""
    a, b = instances
    owner = a.store.owner_for_token(new_token())
    chat, first = a.set_x(owner)
    (sandbox_id,) = standin.sandboxes
    dies(first, a.backend.holds)
    second = b.reopen(owner, chat.id)
    assert KEPT_NOTE in notes(second)
    second.agent.sandbox.run("x = 99")
    dies(second, b.backend.holds)  # B stops in turn; A's tab takes the chat back (Take over here)
    first.close()  # what Take over here does to the tab's old session (ui/session/registry.py install)
    back = a.reopen(owner, chat.id)
    assert KEPT_NOTE in notes(back) and x_plus_one(back) == "100"
    second.close()
    assert standin.live() == [sandbox_id] and x_plus_one(back) == "100"
    back.close()
    assert standin.live() == []


def test_a_sandbox_held_on_one_instance_is_not_attached_on_another(instances: Any, standin: Any) -> None:
    """Attack review, issue 28: B opening the chat while A's session still holds its sandbox took the supervisor's
    stream from under A (the "in use" check saw only B's own process). Now the hold in the shared lease store
    refuses B: B rebuilds in a sandbox of its own and says why; A's sandbox and variables are untouched."""
    a, b = instances
    owner = a.store.owner_for_token(new_token())
    chat, first = a.set_x(owner)
    (sandbox_id,) = standin.sandboxes
    first.agent.sandbox.run("x = 7")
    connects = len(standin.calls("POST", f"/v2/sandboxes/{sandbox_id}/connect"))
    second = b.reopen(owner, chat.id)
    assert "the chat is open elsewhere" in notes(second) and KEPT_NOTE not in notes(second), notes(second)
    assert len(standin.calls("POST", f"/v2/sandboxes/{sandbox_id}/connect")) == connects  # not even reconnected
    assert x_plus_one(second) == "42" and second.agent.sandbox.host.id != sandbox_id
    assert first.agent.sandbox.run("print(x)").logs.strip() == "7"  # A still drives its own worker


def test_two_instances_attaching_one_free_sandbox_at_once_only_one_takes_it(instances: Any, standin: Any) -> None:
    """The sandbox is free (its instance stopped); B and another instance reopen the chat at the same moment:
    exactly one attaches it, the other rebuilds."""
    a, b = instances
    c = Instance("c", a.store.data_dir, standin, b.backend.holds)
    try:
        owner = a.store.owner_for_token(new_token())
        chat, first = a.set_x(owner)
        dies(first, a.backend.holds)
        start = threading.Barrier(2)
        opened: dict[str, Session] = {}

        def reopen(instance: Instance) -> None:
            start.wait(10)
            opened[instance.name] = instance.reopen(owner, chat.id)

        threads = [threading.Thread(target=reopen, args=(i,)) for i in (b, c)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        kept = [name for name, session in opened.items() if KEPT_NOTE in notes(session)]
        assert sorted(opened) == ["b", "c"] and len(kept) == 1, {n: notes(s) for n, s in opened.items()}
        assert all(x_plus_one(session) == "42" for session in opened.values())
    finally:
        c.close()


def test_an_attach_during_another_instances_close_does_not_get_its_sandbox_killed(instances: Any,
                                                                                     standin: Any) -> None:
    """Attack review, issue 28: A's close (its stream cut, so its worker was not stopped through it) checked who
    held the sandbox, then killed it; B attaching in between (from the record it read before A's close dropped
    it) lost its sandbox under it. Now the close kills under
    A's hold, which B cannot take meanwhile: B's attach is refused (it rebuilds), never handed a sandbox about
    to be killed."""
    a, b = instances
    owner = a.store.owner_for_token(new_token())
    chat, first = a.set_x(owner)
    ref = sandbox_record.read(chat)
    assert ref is not None
    sandbox_id = ref.id
    host = first.agent.sandbox.host
    standin.cut_streams()  # A's connection drops (its supervisor and worker run on); A's session then closes
    wait_until(lambda: host.dead, 30, "A's host to see its stream cut")
    standin.streams_cut = False  # the network is back for whoever connects next
    session = host.session
    killing, go = threading.Event(), threading.Event()
    kill = session.close

    def slow_kill() -> None:  # A is between its check and the kill
        killing.set()
        go.wait(60)
        kill()

    session.close = slow_kill
    closer = threading.Thread(target=first.close)
    closer.start()
    agent = b.factory(None, chat.workspace)
    agent.sandbox_owner = sandbox_record.owner_tag(chat)
    refused: SandboxError | None = None
    try:
        assert killing.wait(60)
        try:
            agent.attach_sandbox(sandbox_id)  # B reopens the chat meanwhile, from the record it read
        except SandboxError as exc:
            refused = exc
    finally:
        go.set()
        closer.join(60)
    try:
        if refused is None:  # attached: it must still work after A's close
            assert agent.sandbox.run("print(x + 1)").logs.strip() == "42", "B's sandbox was killed under it"
        assert refused is not None and "open elsewhere" in str(refused)
        assert standin.live() == []  # A's close did end the sandbox it held
    finally:
        agent.close()


def test_another_chats_paused_sandbox_is_not_woken_by_a_record_naming_it(instances: Any, standin: Any) -> None:
    """Attack review, issue 28: the attach resumed a paused sandbox (the service's connect) before it checked
    whose it was. Now the owner in the sandbox's metadata is read first: another chat's paused sandbox stays
    paused, and no connect is made to it."""
    a, b = instances
    owner, stranger = a.store.owner_for_token(new_token()), a.store.owner_for_token(new_token())
    chat, _ = a.set_x(owner)
    theirs, their_session = a.set_x(stranger)
    their_ref = sandbox_record.read(theirs)
    assert their_ref is not None
    their_id = their_ref.id
    assert their_session.agent.sandbox.host.suspend()
    assert standin.sandboxes[their_id].state == "paused"
    connects = len(standin.calls("POST", f"/v2/sandboxes/{their_id}/connect"))
    sandbox_record.record(chat, sandbox_record.SandboxRef("e2b", their_id))  # signed for this chat, names theirs
    reopened = b.reopen(owner, chat.id)
    assert "belongs to another chat" in notes(reopened) and x_plus_one(reopened) == "42"
    assert len(standin.calls("POST", f"/v2/sandboxes/{their_id}/connect")) == connects
    assert standin.sandboxes[their_id].state == "paused"
