"""Several replicas for real (issue 28): redis-server, moto's S3 server, two app replicas and nginx with cookie
affinity, all on loopback (deploy/cluster/cluster.py), driven through the proxy with the app's HTTP API.

A chat continues after its replica is killed (the other reopens it from the store and rebuilds its variables),
a decision asked on one replica is answered on the other, two tabs of one chat on different replicas keep the
one-tab lease, and 16 sessions spread over both replicas run without an error. The failover test kills a replica,
so it runs last in this module."""
from __future__ import annotations

import secrets
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cluster_client import Cluster, client, cookie_for, upstream_for
from gradio_client import handle_file
from nothing_lost_harness import ANSWER, SET_X, chat_text, text_of
from ui_testlib import code_reply, write_transcript

from ui.panels.approval_panel import VIEW_KEYS
from ui.saved.store import new_token
from ui.session.lease import REFUSAL

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
DOUBLE_X = code_reply("Use x again.", "final_answer(x * 2)")
READ_X = code_reply("Read x from the upload.", "x = int(open('numbers.csv').read().split()[-1]) - 1\nprint('x is set')")
#: Where the approval panel's message is among a decision's API outputs (the state and layout columns left out).
API_VIEW = [k for k in VIEW_KEYS if k not in ("request_id", "panel", "plan_box", "card", "question_box")]
MESSAGE = API_VIEW.index("message")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    for program in ("redis-server", "nginx"):
        if not (shutil.which(program) or Path(f"/usr/sbin/{program}").exists() or Path(f"/usr/bin/{program}").exists()):
            pytest.skip(f"{program} is not installed (make cluster-up installs it with apt as root)")
    folder = tmp_path_factory.mktemp("cluster")
    transcript = write_transcript(folder / "script.json", [SET_X, ANSWER] + [ANSWER] * 20)
    running = Cluster(folder, extra_env={"AGENTDECK_MODEL": f"replay:{transcript}", "AGENTDECK_RUNS_PER_MINUTE": "1000",
                                         "AGENTDECK_RUNS_AT_ONCE": "100", "AGENTDECK_SESSION_GRACE_S": "5"})
    running.start()
    running.transcript = transcript  # type: ignore[attr-defined]
    yield running
    running.stop()


def answer_of(chat: list) -> str:
    return text_of(chat[-1]) if chat else ""


def test_sixteen_sessions_spread_over_both_replicas_with_no_errors(cluster: Cluster) -> None:
    cookies = [cookie_for(cluster, i % 2) for i in range(16)]

    def session(cookie: str) -> tuple[int, str]:
        tab = client(cluster.proxy_url, cookie)
        tab.predict({"token": new_token()}, api_name="/browser_session")
        chat = tab.submit({"text": "Set x and use it", "files": []}, api_name="/run").result(timeout=300)[0]
        answer = answer_of(chat)
        shown = answer if answer == "42" else chat_text(chat)[-3000:]  # a wrong one with its whole chat
        return cluster.replica_of(upstream_for(cluster.proxy_url, cookie)), shown

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(session, cookies))
    assert sorted(r for r, _ in results) == [0] * 8 + [1] * 8
    wrong = [a for _, a in results if a != "42"]
    assert not wrong, "\n\n".join(wrong)


def test_two_tabs_of_one_chat_on_different_replicas_keep_the_one_tab_lease(cluster: Cluster) -> None:
    token = new_token()
    first, second = client(cluster.proxy_url, cookie_for(cluster, 0)), client(cluster.proxy_url, cookie_for(cluster, 1))
    first.predict({"token": token}, api_name="/browser_session")
    assert answer_of(first.submit({"text": "Set x", "files": []}, api_name="/run").result(timeout=120)[0]) == "42"
    shown = second.submit({"token": token}, api_name="/browser_session").result(timeout=120)
    assert "Set x" in chat_text(shown[1])  # replica 1 reopened the chat from the shared store

    # The tab that opened or continued the chat last holds it: now the second one, on the other replica.
    refused = first.submit({"text": "Back in the first tab", "files": []}, api_name="/run").result(timeout=120)[0]
    assert REFUSAL.split(".")[0] in chat_text(refused)
    first.submit({"token": token}, api_name="/take_over").result(timeout=120)
    taken = first.submit({"text": "The first tab again", "files": []}, api_name="/run").result(timeout=120)[0]
    assert answer_of(taken) == "42" and REFUSAL.split(".")[0] not in chat_text(taken)
    refused_second = second.submit({"text": "From the second tab", "files": []}, api_name="/run").result(timeout=120)[0]
    assert REFUSAL.split(".")[0] in chat_text(refused_second)


def test_a_decision_asked_on_one_replica_is_answered_on_the_other(cluster: Cluster) -> None:
    """The run pauses on replica 0 (it ends there: nothing waits), the chat is opened on replica 1, which rebuilds
    its variables and resumes the run with the person's edited code; replica 0's tab can no longer answer it."""
    token = new_token()
    first, second = client(cluster.proxy_url, cookie_for(cluster, 0)), client(cluster.proxy_url, cookie_for(cluster, 1))
    first.predict({"token": token}, api_name="/browser_session")
    assert answer_of(first.submit({"text": "Set x to 41", "files": []}, api_name="/run").result(timeout=120)[0]) == "42"
    paused = first.submit({"text": "Use x", "files": []}, approval_mode="approve_code",
                          api_name="/run").result(timeout=120)[0]
    assert "waiting for you" in chat_text(paused) and "final_answer(x + 1)" in chat_text(paused)

    asked = time.monotonic()
    shown = second.submit({"token": token}, api_name="/browser_session").result(timeout=120)
    assert "Use x" in chat_text(shown[1])  # replica 1 reopened the paused chat from the shared store
    view = second.predict("final_answer(x * 2)", "", api_name="/approve")  # an edit, made on replica 1
    assert view[MESSAGE] == {"__type__": "update", "value": "", "visible": False}, view
    chat = second.predict(api_name="/resume")[0]
    resumed_s = time.monotonic() - asked
    text = chat_text(chat)
    assert answer_of(chat) == "82", text[-3000:]  # x rebuilt on replica 1, the edited code run there
    assert "✋ Decision: edit" in text
    print(f"a decision asked on replica 0 answered and finished on replica 1 in {resumed_s:.2f} s")

    # Replica 0 still has the paused run's memory: its tab is refused (the lease is replica 1's), nothing runs.
    late = first.predict("final_answer(x + 1)", "", api_name="/approve")
    assert REFUSAL.split(".")[0] in str(late[MESSAGE]), late
    assert first.predict(api_name="/resume")[0] == {"__type__": "update"}
    again = second.submit({"token": token}, api_name="/browser_session").result(timeout=120)
    assert answer_of(again[1]) == "82" and chat_text(again[1]).count("✋ Decision: edit") == 1


def test_an_api_decision_asked_on_one_replica_is_made_on_the_other(cluster: Cluster) -> None:
    """The same through the app's API: `/ask` on replica 0 returns the decision (its run has ended there), and
    `/decide` on replica 1 (the same caller: its bearer token) opens the chat there and resumes the run."""
    from gradio_client import Client

    token = secrets.token_hex(32)

    def api(replica: int) -> Client:
        cookie = cookie_for(cluster, replica)
        return Client(cluster.proxy_url, verbose=False, download_files=False,
                      headers={"Cookie": f"agentdeck_replica={cookie}", "Authorization": f"Bearer {token}"})

    paused = api(0).predict("Set x", approval_mode="approve_code", api_name="/ask")
    assert paused["status"] == "needs_decision" and "x = 41" in paused["decision"]["details"]["code"], paused
    done = api(1).predict(paused["chat_id"], paused["decision"]["id"], "edit", "final_answer(6 * 7)",
                          api_name="/decide")
    assert done["status"] == "finished" and done["answer"] == "42", done
    with pytest.raises(Exception, match="continued last elsewhere"):  # replica 1 holds it now: no second resume
        api(0).predict(paused["chat_id"], paused["decision"]["id"], "approve", api_name="/decide")


def test_a_chat_continues_on_the_other_replica_after_its_replica_is_killed(cluster: Cluster, tmp_path: Path) -> None:
    """Its upload too: the other replica brings the file back from the shared store (ui/saved/workspace_mirror.py)
    before it re-runs the code that read it, and the follow-up's code reads it again."""
    cookie = cookie_for(cluster, 0)
    tab = client(cluster.proxy_url, cookie)
    token = new_token()
    tab.predict({"token": token}, api_name="/browser_session")
    upload = tmp_path / "numbers.csv"
    upload.write_text("n\n42\n")
    write_transcript(cluster.transcript, [READ_X, ANSWER])  # type: ignore[attr-defined]
    first = tab.submit({"text": "Set x to 41", "files": [handle_file(str(upload))]}, api_name="/run")
    assert answer_of(first.result(timeout=120)[0]) == "42"

    reads_again = code_reply("Read it again.", "final_answer(x * 2 + int(open('numbers.csv').read().split()[-1]) - 42)")
    write_transcript(cluster.transcript, [reads_again] * 4)  # type: ignore[attr-defined] # needs x and the file
    cluster.kill_replica(0)
    killed = time.monotonic()
    assert cluster.replica_of(upstream_for(cluster.proxy_url, cookie)) == 1
    reopened = tab.submit({"token": token}, api_name="/browser_session").result(timeout=120)
    assert "Set x to 41" in chat_text(reopened[1])
    chat = tab.submit({"text": "Double x", "files": []}, api_name="/run").result(timeout=120)[0]
    failover_s = time.monotonic() - killed
    assert answer_of(chat) == "82", chat_text(chat)[-2000:]
    print(f"failover: the follow-up answered on the other replica {failover_s:.2f} s after the kill")
    assert Path(cluster.folder / "replica-1").is_dir()
