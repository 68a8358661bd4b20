"""Several replicas for real (issue 28): redis-server, moto's S3 server, two app replicas and nginx with cookie
affinity, all on loopback (deploy/cluster/cluster.py), driven through the proxy with the app's HTTP API.

A chat continues after its replica is killed (the other reopens it from the store and rebuilds its variables),
two tabs of one chat on different replicas keep the one-tab lease, and 16 sessions spread over both replicas
run without an error. The failover test kills a replica, so it runs last in this module."""
from __future__ import annotations

import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cluster_client import Cluster, client, cookie_for, upstream_for
from gradio_client import handle_file
from nothing_lost_harness import ANSWER, SET_X, chat_text, text_of
from ui_testlib import code_reply, write_transcript

from ui.saved.store import new_token
from ui.session.lease import REFUSAL

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
DOUBLE_X = code_reply("Use x again.", "final_answer(x * 2)")
READ_X = code_reply("Read x from the upload.", "x = int(open('numbers.csv').read().split()[-1]) - 1\nprint('x is set')")


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
