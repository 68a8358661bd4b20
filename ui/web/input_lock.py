"""The message box is locked in the browser while a run streams, not by property updates from the server.

Why: Gradio turns every property update (``gr.update(interactive=...)``) into a new component instance and
its config, JSON schemas included: ~3 ms on its single event loop. With many sessions whose runs start or
end together, those milliseconds queue up in front of every other session's updates (bench/ui_load.py).
Locking with a few lines of JavaScript on the page costs the server nothing. Gradio's own bookkeeping agrees:
a submit is ignored while its event is pending (trigger_mode "once"), the lock only makes that visible.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ui.web.gradio_dom import LOCK_IF_FREE_JS, LOCK_JS, UNLOCK_JS, UNLOCK_OWN_JS  # it knows Gradio's markup


def lock_on(trigger: Callable[..., Any], if_free: bool = False) -> None:
    """Lock the message box when `trigger` fires (e.g. ``task_input.submit``). Register it before the
    trigger's streaming listener: the page runs a trigger's listeners in the order they were added, and a
    JavaScript-only listener added after a streaming one runs only when that one has finished.
    `if_free`: for an event refused while a run goes on (Retry, Edit's Send): the box is locked only when no run
    holds it, and the matching `unlock_after(..., if_free=True)` frees only a box this event locked."""
    trigger(None, inputs=None, outputs=None, js=LOCK_IF_FREE_JS if if_free else LOCK_JS, queue=False,
            api_visibility="private")


def unlock_after(event: Any, if_free: bool = False) -> None:
    """Unlock the message box when `event` (a streaming event, or the last step of its chain) has finished,
    whatever its outcome (`if_free`: see `lock_on`)."""
    event.then(None, inputs=None, outputs=None, js=UNLOCK_OWN_JS if if_free else UNLOCK_JS, queue=False,
               api_visibility="private")
