"""The run's status line under the chat: its state, step, elapsed time and tokens, or what it waits for.

Kept apart from the event mapping (ui/chat/render.py), which keeps the facts it reads (the run's step, start,
tokens, finish, what it waits for, a pending retry).
"""
from __future__ import annotations

import time
from typing import Any, Protocol

from agents import events as ev
from ui.chat.formatting import format_tokens


class RunProgress(Protocol):
    """What the line reads (ui/chat/render.py's Transcript keeps it up to date from the run's events)."""
    finished: ev.RunFinished | None
    run_started: float
    waiting: str | None
    retrying: ev.ModelRetrying | None
    current_step: int
    max_steps: int
    run_tokens: Any
    title_tokens: Any


def status_line(t: RunProgress, now: float | None = None) -> str:
    """A quiet one-line summary: step, elapsed time and tokens."""
    if t.finished is not None:
        e = t.finished
        state = str(getattr(e.state, "value", e.state))
        tokens = format_tokens(e.token_usage) or "0 tokens"
        state = {"max_steps": "no answer (out of steps)", "error": "no answer (error)",
                 "interrupted": "stopped"}.get(state, state)
        title = format_tokens(t.title_tokens) if getattr(t, "title_tokens", None) is not None else ""
        title = f" · chat title: {title}" if title else ""
        return f"{state} · {e.steps} step{'' if e.steps == 1 else 's'} · {e.duration_s:.1f} s · {tokens}{title}"
    if not t.run_started:
        return ""
    now = now or time.time()
    if t.waiting:
        what = "your answer" if t.waiting == "question" else f"your decision ({t.waiting.replace('_', ' ')})"
        return f"✋ waiting for {what} · step {t.current_step}/{t.max_steps}"
    if t.retrying is not None:
        r = t.retrying
        left = max(0.0, r.timestamp + r.wait_s - now)
        return (f"⏳ {r.reason} · retry {r.attempt}/{r.max_retries} in {left:.0f} s · "
                f"step {t.current_step}/{t.max_steps}")
    return f"running · step {t.current_step}/{t.max_steps} · {running_time(t.run_started, now)} s"


def running_time(since: float, now: float) -> str:
    """The run's time so far, marked with when the run started (`since`, from its events) and when the line was
    made (the server's clock), in milliseconds, so that the page counts it on between updates (ui/web/gradio_dom.py
    ELAPSED_JS): every tab on the run shows the same time, however often its updates come. A tab watching another
    tab's run (ui/panels/watch.py) showed the time its page load read, until its own stream began, and the running
    tab only each heartbeat's."""
    marks = f"ad-elapsed ad-since-{round(since * 1000)} ad-now-{round(now * 1000)}"  # (the page keeps classes only)
    return f'<span class="{marks}">{max(0.0, now - since):.1f}</span>'
