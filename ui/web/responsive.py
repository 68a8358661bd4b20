"""Narrow screens and dark mode: what the layout needs beyond Gradio's defaults.

Why: Gradio's Sidebar starts open, and on a phone (390 px) an open sidebar covers the whole screen, so the
chat is hidden until the person finds the chevron. On narrow screens the page closes it once, when it loads
(the chevron opens it again). Dark mode (`?__theme=dark` or the system setting) gets readable colours for
the few places that set their own.
"""
from __future__ import annotations

from typing import Any

import gradio as gr

from ui.web.gradio_compat import CLOSE_SIDEBAR_JS, NARROW_MAX_PX

CSS = f"""
@media (max-width: {NARROW_MAX_PX}px) {{
  html:not(.ad-sidebar-settled) #history-sidebar {{ visibility: hidden; }}
}}
.dark #chat .ad-error {{ color: #fda29b; background: #55160c; border-color: #912018; }}
.dark #approval-message, .dark #approval-message * {{ color: #fda29b !important; }}
"""


def wire(demo: gr.Blocks) -> Any:
    """Close the sidebar on narrow screens when the page loads."""
    return demo.load(None, js=CLOSE_SIDEBAR_JS)
