"""Pauses that hold nothing (issue 28): a live run in the app that waits for a person's decision has ended, its
pending request in memory and in the saved chat; no thread waits while the person thinks, and the answer starts a
resumed run with the same sandbox (its variables kept).

Measured as the process sees it: `threading.active_count()` and the kernel's own list of this process's threads
(/proc/self/task), with twenty sessions each paused on a decision, against the same twenty sessions idle with their
sandboxes up. Before this, each paused run held its agent thread blocked in the decision broker."""
from __future__ import annotations

import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from shared_servers import redis_url  # noqa: F401 (fixture)
from ui_testlib import Req, chat_text, code_reply, write_transcript
from ui_testlib import form as settings_form
from waiting import wait_until

from agents.memory import TaskStep
from ui import agent_factory
from ui.app import AgentDeckApp
from ui.panels.approval_panel import VIEW_KEYS
from ui.panels.approvals import ApprovalHandlers
from ui.panels.history import HistoryController
from ui.panels.watch import WATCH_PAUSED_NOTE, RunWatch
from ui.saved.store import new_token
from ui.session.lease import ANSWERED, ChatLeases
from ui.session.watchers import Watch
from ui.settings import AppConfig
from ui.shared.state import MemoryState, SharedState
from ui.shared.state_redis import RedisState

SESSIONS = 20
SET_X = code_reply("Set x.", "x = 6\nfinal_answer(x)")
USE_X = code_reply("Use x.", "y = x * 7\nprint('y is', y)\nfinal_answer(y)")
#: Threads named by the agent loop for a run's or a resumed run's own thread (agents/loop/base.py).
RUN_THREADS = ("agent-run-", "agent-resume-")


def kernel_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def run_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(RUN_THREADS)]


def view(handlers: ApprovalHandlers, req: Req) -> dict[str, Any]:
    return dict(zip(VIEW_KEYS, handlers.refresh(None, req), strict=True))


@pytest.fixture
def app(tmp_path: Path):  # type: ignore[no-untyped-def]
    transcript = write_transcript(tmp_path / "script.json", [SET_X, USE_X])
    config = AppConfig(model=f"replay:{transcript}", data_dir=tmp_path / "data", authorized_imports=(), max_steps=4,
                       runs_per_minute=10_000, runs_at_once=10_000, max_sandboxes=SESSIONS + 4)
    made = AgentDeckApp(config)
    yield made, config
    made.registry.shutdown()


def open_page(app: AgentDeckApp, config: AppConfig, req: Req) -> None:
    """The page's load with its owner token: the session's chat is saved (ui/panels/history.py)."""
    list(HistoryController(app.services).on_load({"token": new_token()}, req, **settings_form(config.model)))


def send(app: AgentDeckApp, config: AppConfig, req: Req, text: str, mode: str) -> None:
    list(app.run({"text": text, "files": []}, req, mode, **settings_form(config.model)))


def paused_tab(app: AgentDeckApp, config: AppConfig, mode: str = "approve_code") -> tuple[Req, Any]:
    """A tab whose chat set x in a first run, then paused its second run at the decision `mode` asks for:
    (the tab, its session)."""
    req = Req("tab")
    open_page(app, config, req)
    send(app, config, req, "Set x", "autonomous")
    send(app, config, req, "Use x", mode)
    return req, app.session_for(req)


def test_twenty_paused_runs_hold_no_thread_and_each_answer_resumes_its_run(app) -> None:  # type: ignore[no-untyped-def]
    app, config = app
    handlers = ApprovalHandlers(app.services)
    tabs = [Req(f"tab-{i}") for i in range(SESSIONS)]
    for req in tabs:  # each session's sandbox is up, its variable x set
        open_page(app, config, req)
        send(app, config, req, "Set x", "autonomous")
        assert app.session_for(req).record.transcript.finished.output == 6
    wait_until(lambda: not run_threads(), what="the first runs' threads to end")
    base_python, base_kernel = threading.active_count(), kernel_threads()

    for req in tabs:
        send(app, config, req, "Use x", "approve_code")
        assert app.session_for(req).pending_request() is not None
    # Condition, not a sleep: each run ends once its decision is recorded; its thread is then gone.
    wait_until(lambda: not run_threads() and threading.active_count() <= base_python
               and kernel_threads() <= base_kernel, timeout=60,
               what=f"no thread held by the paused runs (threads now {threading.active_count()}, "
                    f"/proc/self/task {kernel_threads()}, baseline {base_python}/{base_kernel})")
    paused_python, paused_kernel = threading.active_count(), kernel_threads()
    print(f"threads: baseline {base_python} (kernel {base_kernel}); with {SESSIONS} runs paused on a decision "
          f"{paused_python} (kernel {paused_kernel})")
    for req in tabs:
        session = app.session_for(req)
        assert not session.running and session.agent.memory.pending is not None
        assert session.record.saved is not None  # the pending record is in the saved chat
        memory, _ = app.services.store.load_memory(session.record.saved)
        assert memory.pending is not None and memory.pending.request_id == session.pending_request().request_id
        assert "y = x * 7" in str(view(handlers, req)["edit_code"])

    for req in tabs:  # each answer resumes its own run, on its own sandbox (x is still there)
        shown = view(handlers, req)["request_id"]
        answered = dict(zip(VIEW_KEYS, handlers.approve(shown, "y = x * 7\nprint('y is', y)\nfinal_answer(y)", "",
                                                        req), strict=True))
        assert answered["panel"] == {"__type__": "update", "visible": False}, answered["message"]
        list(handlers.resume(req))
        transcript = app.session_for(req).record.transcript
        assert transcript.finished is not None and transcript.finished.output == 42, chat_text(transcript.messages())
        shown = chat_text(transcript.messages())
        assert shown.count("```python\ny = x * 7") == 1 and shown.count("✋ Decision: approve") == 1, shown
        assert "y is 42" in shown and "waiting for you" not in shown
        assert app.session_for(req).agent.memory.pending is None
    wait_until(lambda: not run_threads(), what="the resumed runs' threads to end")


def test_the_same_decisions_held_a_thread_each_before(app, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The measure above can fail: with runs that wait in their thread (pause mode off), each paused session
    holds one, which it counts."""
    monkeypatch.setattr(agent_factory, "PAUSE_ON_DECISION", False)
    app, config = app
    tabs = [Req(f"tab-{i}") for i in range(4)]
    for req in tabs:
        send(app, config, req, "Use x", "approve_code")
        assert app.session_for(req).pending_request() is not None
    assert len(run_threads()) == len(tabs)
    print(f"threads with {len(tabs)} runs waiting in their thread: {threading.active_count()} "
          f"(kernel {kernel_threads()})")
    for req in tabs:
        app.stop(req)
    wait_until(lambda: not run_threads(), what="the stopped runs' threads to end")


def test_stop_ends_a_paused_run_in_the_chat_and_on_disk(app) -> None:  # type: ignore[no-untyped-def]
    app, config = app
    handlers = ApprovalHandlers(app.services)
    req, session = paused_tab(app, config)
    assert session.pending_request() is not None and not run_threads()
    assert app.stop(req) == "<small>stopping…</small>"
    list(handlers.resume(req))  # the page chains this after Stop: nothing to stream
    transcript = session.record.transcript
    assert transcript.finished is not None and transcript.finished.state == "interrupted"
    assert session.pending_request() is None and session.agent.memory.pending is None
    memory, _ = app.services.store.load_memory(session.record.saved)
    assert memory.pending is None and "y is 42" not in chat_text(transcript.messages())


@pytest.fixture(params=["memory", "redis"])
def shared(request: pytest.FixtureRequest) -> SharedState:
    if request.param == "memory":
        return MemoryState()
    store = RedisState(request.getfixturevalue("redis_url"))
    store.client.flushdb()
    return store


def test_a_decision_is_answered_once_among_replicas_sharing_the_state(shared: SharedState) -> None:
    """A paused run's memory is on every replica that opened its chat, and none of them holds a thread for it:
    two answers at once (two tabs, two replicas) must not both resume it. Sixteen racing answers, one passes."""
    replicas = [ChatLeases(registry=None, state=shared) for _ in range(2)]  # type: ignore[arg-type]
    session = SimpleNamespace(record=SimpleNamespace(saved=None))  # a chat not kept: no lease to take
    barrier = threading.Barrier(16)

    def answer(index: int) -> str | None:
        barrier.wait()
        return replicas[index % 2].claim_decision(f"tab-{index}", session, "request-1")  # type: ignore[arg-type]

    with ThreadPoolExecutor(16) as pool:
        outcomes = list(pool.map(answer, range(16)))
    assert outcomes.count(None) == 1 and set(outcomes) == {None, ANSWERED}
    assert replicas[0].claim_decision("tab-x", session, "request-2") is None  # another request is its own
    replicas[1].release_decision("request-1")  # the passing answer was refused by the agent: it may come again
    assert replicas[1].claim_decision("tab-y", session, "request-1") is None


def test_stop_on_a_paused_run_shows_that_runs_tokens_not_the_previous_ones(app) -> None:  # type: ignore[no-untyped-def]
    """Found using the app: a second run stopped at its decision ended "stopped · … · 5,530 tokens", the first
    run's figure (the chat's tokens were only updated when a run finished). The stopped line counts the paused
    run's own reply, as the end of a finished run would."""
    app, config = app
    req = Req("tab")
    open_page(app, config, req)
    send(app, config, req, "Set x", "autonomous")
    session = app.session_for(req)
    first = session.record.transcript.finished.token_usage
    send(app, config, req, "Use x", "approve_code")
    pending = session.agent.memory.pending
    assert pending is not None
    asked = (pending.reply_input_tokens, pending.reply_output_tokens)
    assert asked != (first.input_tokens, first.output_tokens)  # the two runs' figures tell apart
    app.stop(req)
    ended = session.record.transcript.finished
    assert ended is not None and ended.state == "interrupted"
    assert (ended.token_usage.input_tokens, ended.token_usage.output_tokens) == asked


def test_a_resumed_run_s_clock_leaves_out_the_time_the_person_took_to_decide(app) -> None:  # type: ignore[no-untyped-def]
    """Found using the app: while a resumed run went on, its line said "running · step 5/12 · 124.6 s" (counted
    from the run's first start, the person's four decisions included), then at its end "11.3 s" (the run's own
    time). The running line now counts as the end does."""
    app, config = app
    handlers = ApprovalHandlers(app.services)
    req, session = paused_tab(app, config)
    transcript = session.record.transcript
    transcript.run_started -= 100.0  # as if the person took 100 s to decide: the run itself began that long ago
    before_pause = next(s for s in reversed(session.agent.memory.steps) if isinstance(s, TaskStep)).duration_s
    answered_at = time.time()
    handlers.approve(view(handlers, req)["request_id"], "y = x * 7\nprint('y is', y)\nfinal_answer(y)", "", req)
    assert transcript.run_started >= answered_at - before_pause - 1.0  # the run's own time so far, not the wait
    list(handlers.resume(req))
    assert transcript.finished is not None and transcript.finished.output == 42


@pytest.mark.parametrize("mode,kind", [("approve_code", "code"), ("review_plans", "plan")])
def test_stop_at_a_decision_keeps_the_paused_step_in_the_saved_chat(app, mode, kind) -> None:  # type: ignore[no-untyped-def]
    """Found using the app: Stop at a plan review, then the chat reopened: the live chat had shown the plan ("Not
    decided: the run was stopped"), the reopened one only "Stopped", "0 steps · 0 tokens" (the paused step is not
    in memory while it waits; Stop dropped it with the request). The saved chat keeps it, marked stopped, with the
    reply's tokens: a plan with its text, a code step with the code it proposed (never run)."""
    app, config = app
    req, session = paused_tab(app, config, mode)
    pending = session.agent.memory.pending
    assert pending is not None and pending.kind == kind
    proposed = pending.payload["code" if kind == "code" else "plan"]
    app.stop(req)
    memory, _ = app.services.store.load_memory(session.record.saved)
    assert memory is not None and memory.pending is None
    kept = memory.steps[-1]
    task = next(s for s in reversed(memory.steps) if isinstance(s, TaskStep))
    assert task.state == "interrupted" and task.end_step == kept.step_number
    assert (kept.token_usage.input_tokens, kept.token_usage.output_tokens) == (
        pending.reply_input_tokens, pending.reply_output_tokens) != (0, 0)
    if kind == "code":
        assert kept.code == proposed and kept.stopped and kept.step_number == pending.step_number
        # Its restore note says the code never ran (found by a review: "variables it made may be missing").
        from agents.loop.restore import SandboxRebuildReport, skip_reason
        from ui.saved.restore import rebuild_note

        why = skip_reason(kept)
        assert why is not None
        note = rebuild_note(SandboxRebuildReport(skipped=[(kept.step_number, why)]), 1, memory=memory)
        assert "never ran" in note and "may be missing" not in note, note
    else:
        assert kept.plan == proposed


def blocked_on_the_session_lock(thread: threading.Thread) -> bool:
    """`thread` waits for the session's lock inside RunControl (its top frame is the method taking it)."""
    frame = sys._current_frames().get(thread.ident or -1)
    return frame is not None and frame.f_code.co_filename.endswith("run_control.py")


@pytest.mark.parametrize("reader", ["watching tab", "page unload"])
def test_a_decision_answered_while_another_thread_reads_the_run_counts_as_unfinished(
        app, monkeypatch, reader: str) -> None:  # type: ignore[no-untyped-def]
    """While an answer resumes a paused run (the chat saved with its request taken, then the resumed run started,
    all under the session's lock), a reader asking whether a run goes on or waits must see one or the other. Read
    in two steps it saw the paused run ended (`running` False, before the lock) and then no request waiting
    (after it): a second tab watching the chat stopped following the run it had just resumed (1 in ~15 under
    load, then its Approve found the run gone), and a page closed at that moment closed the session with it."""
    app, config = app
    handlers = ApprovalHandlers(app.services)
    req, session = paused_tab(app, config)
    watch = Watch(session, session.record.saved.id, "owner")
    seen: list[bool] = []

    def read() -> None:
        if reader == "watching tab":
            seen.append(watch.live)
        else:
            app.on_unload(req)  # closes the session unless a run goes on or waits
            seen.append(session.closed_at is None)

    save = session._runs._save
    readers: list[threading.Thread] = []

    def save_then_let_the_reader_in(*args: Any, **kwargs: Any) -> bool:
        """The answer's save of the taken request, under the session's lock: a reader starts now and waits for
        the lock before the answer goes on (the interleaving the race needs, made certain)."""
        if not readers:
            thread = threading.Thread(target=read, name="reader")
            readers.append(thread)
            thread.start()
            wait_until(lambda: blocked_on_the_session_lock(thread), timeout=10,
                       what="the reader to wait for the session's lock")
        return save(*args, **kwargs)

    monkeypatch.setattr(session._runs, "_save", save_then_let_the_reader_in)
    shown = view(handlers, req)["request_id"]
    handlers.approve(shown, "y = x * 7\nprint('y is', y)\nfinal_answer(y)", "", req)
    assert readers, "the answer did not save the taken request"
    readers[0].join(timeout=10)
    assert seen == [True], f"the {reader} saw no run going on and none waiting"
    list(handlers.resume(req))
    assert session.record.transcript.finished is not None and session.record.transcript.finished.output == 42


@pytest.mark.parametrize("refused_by", [None, "runs per minute"])
def test_a_paused_run_no_page_shows_gives_way_to_a_new_run_and_keeps_its_decision(
        tmp_path: Path, refused_by: str | None) -> None:
    """One run at once per visitor: a tab closed while its decision waits leaves a paused run no page shows; the
    visitor's next message ends it (as the reaper would after the reattach grace) and runs. The ended run's chat
    keeps its steps and its decision, so reopening it offers the decision again. A message refused for another
    reason (here the runs-per-minute limit) ends nothing."""
    transcript = write_transcript(tmp_path / "script.json", [SET_X, USE_X, SET_X])
    config = AppConfig(model=f"replay:{transcript}", data_dir=tmp_path / "data", authorized_imports=(), max_steps=4,
                       runs_per_minute=2 if refused_by else 10_000, runs_at_once=1, min_free_mb=0)
    app = AgentDeckApp(config)
    try:
        req, session = paused_tab(app, config)
        request_id = session.pending_request().request_id
        app.on_unload(req)  # the page went away: kept for a reload's reattach, no page shows its decision
        assert session.closed_at is None and session.detached_at is not None
        fresh = Req("fresh-tab")
        open_page(app, config, fresh)
        if refused_by:  # the two runs of paused_tab used the minute's two
            with pytest.raises(Exception, match="Too many runs: this server allows 2 per minute"):
                send(app, config, fresh, "Set x", "autonomous")
            assert session.closed_at is None and session.pending_request() is not None  # nothing ended
            return
        send(app, config, fresh, "Set x", "autonomous")
        fresh_chat = chat_text(app.session_for(fresh).record.transcript.messages())
        assert app.session_for(fresh).record.transcript.finished.output == 6, fresh_chat
        assert session.closed_at is not None  # the paused run no page showed gave way
        memory, _ = app.services.store.load_memory(session.record.saved)
        assert memory.pending is not None and memory.pending.request_id == request_id
        assert not memory.pending.taken_at  # still to be decided, not stopped
    finally:
        app.registry.shutdown()


def test_a_tab_opened_on_a_paused_chat_is_told_it_can_decide_there(app, capsys) -> None:  # type: ignore[no-untyped-def]
    """A second tab opened on a chat whose run waits for a decision watches it, and its panel's buttons work: its
    note says so (a newcomer was told "read-only" over working Approve and Reject buttons)."""
    app, config = app
    req, session = paused_tab(app, config)
    RunWatch(app.services).start("second-tab", session, "owner", session.record.saved.id)
    said = capsys.readouterr().out
    assert WATCH_PAUSED_NOTE in said and "read-only" not in said, said


def test_a_watch_started_after_the_pause_shows_the_decision_the_page_lacks(app) -> None:  # type: ignore[no-untyped-def]
    """A watching tab's stream can start after the run paused and after the page load's refresh looked for a
    decision (a loaded server): it took what waited then as shown, and the tab never got the panel (a full run's
    failure: 20 s with no Approve). The page's own panel says what it shows: only a decision it lacks is sent in
    full (its code); the one it shows is only kept shown (ui/panels/watch.py `panel_again`: the person's edits stay)."""
    app, config = app
    req, session = paused_tab(app, config)
    waiting = session.pending_request().request_id
    watch = RunWatch(app.services)
    # the panel sent in full, or only kept shown; whatever else a page (or a caller of the event) sends counts as
    # showing no decision: the tab gets the one its watched chat waits for, as it would with an empty panel
    for shown, in_full in (("", True), (waiting, False), (None, True), (12345, True), ({"x": 1}, True),
                           ("f" * 10_000, True)):
        watch.start("second-tab", session, "owner", session.record.saved.id)
        follow = watch.follow(shown, Req("second-tab"))
        first = dict(zip(VIEW_KEYS[:-1], next(follow)[5:], strict=True))
        follow.close()
        assert first["request_id"] == waiting and first["panel"].get("visible") is True, (shown, first)
        assert ("value" in first["edit_code"]) == in_full, (shown, first["edit_code"])
