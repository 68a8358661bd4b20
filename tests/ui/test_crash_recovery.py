"""`kill -9` of the app mid-run (issue 17): the person's message and every finished step are on disk, and
the restarted app reopens the chat with them and continues it."""
from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from nothing_lost_harness import ANSWER, SET_X, SLOW, chat_text, text_of, wait_until
from ui_testlib import RUNNING, run_app, write_transcript

from ui.saved.store import ChatStore, new_token

pytestmark = pytest.mark.slow
SECRET = "k" * 40


def saved_steps(data: Path, token: str) -> list[str]:
    """The step types of the browser's open chat as it is on disk now ([] until its memory is saved)."""
    store = ChatStore(data, secret=SECRET.encode())
    owner = store.owner_for_token(token)
    chat_id = store.current(owner)
    chat = store.get(owner, chat_id) if chat_id else None
    if chat is None:
        return []
    memory, _ = store.load_memory(chat)
    return [s.step_type for s in memory.steps] if memory is not None else []


def test_kill_9_mid_run_loses_at_most_the_step_in_progress(tmp_path: Path) -> None:
    from gradio_client import Client

    transcript = write_transcript(tmp_path / "script.json", [SET_X, SLOW])
    data = tmp_path / "data"
    data.mkdir()
    env = {"AGENTDECK_SECRET": SECRET}
    token = new_token()
    with run_app(transcript, data, extra_env=env) as url:
        client = Client(url, verbose=False, download_files=False)
        client.predict({"token": token}, api_name="/browser_session")
        client.submit({"text": "Set x, then wait", "files": []}, api_name="/run")
        wait_until(lambda: saved_steps(data, token) == ["task", "action"], timeout=60, what="step 1 on disk")
        RUNNING[url].send_signal(signal.SIGKILL)
        RUNNING[url].wait(10)

    write_transcript(transcript, [ANSWER])
    with run_app(transcript, data, extra_env=env) as url:
        client = Client(url, verbose=False, download_files=False)
        out = client.submit({"token": token}, api_name="/browser_session").result(timeout=60)
        text = chat_text(out[1])
        assert "Set x, then wait" in text and "x is set" in text and "Re-ran 1 recorded code step" in text
        assert "sleeping" not in text  # the step in progress is the only thing lost
        chat = client.submit({"text": "Use x", "files": []}, api_name="/run").result(timeout=60)[0]
        assert text_of(chat[-1]) == "42"
    meta = json.loads(next(data.glob("owners/*/*/meta.json")).read_text())
    assert meta["title"] == "Set x, then wait"
