"""Narrow screens and dark mode: what the layout needs beyond Gradio's defaults.

Why: Gradio's Sidebar starts open, and on a phone (390 px) an open sidebar covers the whole screen, so the
chat is hidden until the person finds the chevron. On narrow screens the page closes it once, when it loads
(the chevron opens it again). Dark mode (`?__theme=dark` or the system setting) gets readable colours for
the few places that set their own.
"""
from __future__ import annotations

from typing import Any

import gradio as gr

#: At most this wide (CSS px), the chats sidebar starts closed.
NARROW_MAX_PX = 768

CLOSE_SIDEBAR_JS = f"""
() => {{
  const settle = () => document.documentElement.classList.add('ad-sidebar-settled');
  if (!window.matchMedia('(max-width: {NARROW_MAX_PX}px)').matches) return settle();
  let tries = 0;
  const close = () => {{
    const sidebar = document.querySelector('#history-sidebar');
    const toggle = sidebar && sidebar.querySelector('button.toggle-button');
    if (toggle) {{
      if (sidebar.classList.contains('open')) toggle.click();
      return settle();
    }}
    if (++tries < 100) return setTimeout(close, 20);
    settle();  // no sidebar after 2 s: never leave it hidden
  }};
  close();
}}
"""

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
