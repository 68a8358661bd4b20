"""Narrow screens and dark mode: what the layout needs beyond Gradio's defaults.

Why: Gradio's Sidebar starts open, and on a phone (390 px) an open sidebar covers the whole screen, so the
chat is hidden until the person finds the chevron. On narrow screens the page closes it once, when it loads
(the chevron opens it again). Dark mode (`?__theme=dark` or the system setting) gets readable colours for
the few places that set their own.

On a phone (844 px high) the chat's 68% of the screen, under the header's two lines, put the row of ⏹ Stop below
the screen: a tab watching another tab's run (whose Stop is the one thing it can do) showed no Stop until
scrolled. There the chat takes 60% of the screen, and the status line, the message box and that row fit under it.

On a phone a pending approval took most of the screen (a 570 px panel under the chat), so the step it asks
about was scrolled away: there the chat and the panel share the screen and the buttons sit side by side. On
every screen (issue 31: at 1440x900 a plan review's buttons were below the fold) the code (or plan, or
arguments) scrolls inside a box of bounded height, and when the panel appears the page scrolls so that the
panel ends at the screen's bottom, the step in the chat above it.

The sidebar's export box cut the file's name (Gradio's File keeps it on one line with an ellipsis in a box
80 px high): the whole name wraps in the row, and the box grows to hold it.

Gradio prefixes each rule of a page's CSS with `.gradio-container… .contain`, and inside `@media` it keeps only
the prefixed form: a rule there must start from an element inside the page (`#chat-column`, not `html` or
`.gradio-container`).
"""
from __future__ import annotations

from typing import Any

import gradio as gr

from ui.web.gradio_dom import APPROVAL_IN_VIEW_JS, CLOSE_SIDEBAR_JS, CLOSE_SIDEBAR_NOW_JS, NARROW_MAX_PX

CSS = f"""
@media (max-width: {NARROW_MAX_PX}px) {{
  html:not(.ad-sidebar-settled) #history-sidebar {{ visibility: hidden; }}
  #chat-column #chat {{ height: 60vh !important; }}
  #chat-column:has(#approval-card) #chat, #chat-column:has(#plan-review) #chat {{ height: 38vh !important; }}
  #approval-panel {{ padding: 6px 8px; gap: 6px; }}
  #approval-panel .ad-approval-title h3 {{ font-size: var(--text-lg); }}
  #approval-panel .ad-approval-title p {{ font-size: var(--text-sm); }}
  #approval-panel .form, #approval-panel .block {{ gap: 4px; }}
  #approval-panel .row:has(> #approve-btn), #approval-panel .row:has(> #plan-continue-btn) {{
    flex-wrap: nowrap; gap: 8px; }}
  #approve-btn, #reject-btn, #plan-continue-btn, #plan-reject-btn {{ min-width: 0 !important; flex: 1 1 0; }}
}}
#edit-code .cm-scroller {{ max-height: 24vh !important; overflow: auto; }}
#plan-editor textarea, #edit-args textarea {{ max-height: 24vh; overflow-y: auto; }}
#export-file .file-preview-holder {{ max-height: none !important; overflow: visible; }}
#export-file td.filename {{ overflow-wrap: anywhere; white-space: normal; }}
#export-file td.filename .stem {{ white-space: normal; overflow: visible; text-overflow: clip; }}
#export-file td.download {{ width: 1%; white-space: nowrap; }}
.dark #chat .ad-error {{ color: #fda29b; background: #55160c; border-color: #912018; }}
.dark #approval-message, .dark #approval-message * {{ color: #fda29b !important; }}
"""


def wire(demo: gr.Blocks) -> Any:
    """Close the sidebar on narrow screens when the page loads; keep a pending approval and its step in view."""
    demo.load(None, js=APPROVAL_IN_VIEW_JS)
    return demo.load(None, js=CLOSE_SIDEBAR_JS)


def close_sidebar_on_choice(chosen: Any) -> None:
    """On a narrow screen, a chat chosen in the sidebar closes it (it covered the chat just opened); in the
    browser only, at the click."""
    chosen(None, js=CLOSE_SIDEBAR_NOW_JS)
