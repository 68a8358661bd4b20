"""How the chat's steps look: one compact line per folded step, its key output right under it, tables that read.

Why: Gradio gives every message its own padded bubble, so a folded step (one 46 px line) took 104 px and a
run of steps read as boxes separated by empty bands; tables inherited the prose font and broke numbers
inside cells. Steps and their previews (ui/chat/step_output.py, found by their `ad-step-output` marker) sit
close together, indented under the step; tables are compact, keep numbers whole, align them right and
scroll sideways when wide. Colours come from Gradio's theme variables, so dark mode follows.

Gradio lays the chat's copy and clear icons over the top right corner of its scrolling list, so on a phone a step
scrolled to the top had its title's text under them (issue 31), and at every width the step's bar did: the icons
sit in their own band above the list instead, and the list takes the height that is left. Gradio's Clear icon is
not shown: it only emptied the view, and the next message brought the whole chat back (New chat starts afresh).
Step titles stay on one line, except on a phone, where a long one ("✋ Waiting for your decision: run this code?")
wraps instead of sticking out of its card.

The chat also stays at its bottom while the person has not scrolled up: Gradio scrolls only when a new value
arrives, so a chart that finished loading a moment later pushed the running step's output out of sight, and
later updates no longer counted as "at the bottom".

Until the page's load event has shown this browser's chat, and while a chat clicked in the side list opens, an
empty chat says "Loading your chat…" instead of the welcome (Gradio's placeholder): a second tab showed the
welcome for seconds before the chat it reopens appeared.
"""
from __future__ import annotations

from typing import Any

import gradio as gr

from ui.web.gradio_dom import CHAT_OPENED_JS, CHAT_OPENING_JS, CHAT_SHOWN_JS, ELAPSED_JS, FOLLOW_OUTPUT_JS

CSS = """
#chat .top-panel button[aria-label="Clear"] { display: none; }
#chat .wrapper > .icon-button-wrapper.top-panel { position: static; align-self: flex-end; flex: none;
                                                  margin: 4px 6px 2px; }
#chat .wrapper > [role=log] { flex: 1 1 auto; min-height: 0; }
#chat .message-row:has(.thought-group) { padding-top: 2px; padding-bottom: 2px; }
#chat .message-row:has(.thought-group) .message { margin-bottom: 0; padding-top: 0; padding-bottom: 0; }
#chat .message-row .thought-group { margin: 2px 0; padding: 2px var(--spacing-md); }
#chat .message-row .thought-group .title .md { flex-shrink: 0; }
#chat .message-row:has(.image-container) { padding-top: 2px; padding-bottom: 2px; }
#chat .message-row:has(.image-container) .message { margin-bottom: 0; }
#chat .message-row:has(.ad-step-output) { padding-top: 0; padding-bottom: 6px; }
#chat .message:has(.ad-step-output) { margin-bottom: 0; padding-top: 0; padding-left: calc(var(--spacing-md) + 32px); }
#chat p:has(> .ad-step-output:only-child) { display: none; }
#chat .message:has(.ad-step-output) .md { font-size: var(--text-sm); }
#chat .message:has(.ad-step-output) .md > * { margin-top: 4px; margin-bottom: 4px; }
#chat .message:has(.ad-step-output) pre { padding: 6px 10px; }
#chat .md table { display: block; width: max-content; max-width: 100%; overflow-x: auto; font-size: var(--text-sm);
                  margin: 4px 0; border-collapse: collapse; }
#chat .md table th, #chat .md table td { padding: 2px 10px; white-space: nowrap; line-height: 1.4; }
#chat .md a code { text-decoration: underline; }
@media (max-width: 768px) {
  #chat .message:has(.ad-step-output) { padding-left: calc(var(--spacing-md) + 8px); }
  #chat .message-row .thought-group .title .md { flex-shrink: 1; min-width: 0; overflow-wrap: anywhere; }
}
html:not(.ad-chat-shown) #chat .placeholder-content > *, html.ad-chat-opening #chat .placeholder-content > * {
  display: none; }
html:not(.ad-chat-shown) #chat .placeholder-content::before, html.ad-chat-opening #chat .placeholder-content::before {
  content: "Loading your chat…"; margin: auto; color: var(--body-text-color-subdued); }
#chat .md table td[align=right], #chat .md table th[align=right] { text-align: right;
                                                                  font-variant-numeric: tabular-nums; }
"""


def wire(demo: gr.Blocks) -> Any:
    """Make the chat follow its output when the page loads, say "Loading…" while a chosen chat opens, and count
    the status line's running time on between updates."""
    demo.load(None, js=CHAT_OPENING_JS)
    demo.load(None, js=ELAPSED_JS)
    return demo.load(None, js=FOLLOW_OUTPUT_JS)


_JS_ONLY: dict[str, Any] = dict(inputs=None, outputs=None, queue=False, api_visibility="private")


def shown_after(load_event: Any) -> None:
    """The chat's loading state at page load ends once `load_event` (the event that shows this browser's chat)
    has ended, whatever its outcome."""
    load_event.then(None, js=CHAT_SHOWN_JS, **_JS_ONLY)


def opened_after(open_event: Any) -> None:
    """The loading state of a chat chosen in the side list (set in the page when the choice changes) ends once
    `open_event` (the list's select event) has ended, whatever its outcome."""
    open_event.then(None, js=CHAT_OPENED_JS, **_JS_ONLY)
