"""A visible focus outline on the controls a keyboard user reaches most: the message box, the model picker, the
approval mode, and the sidebar's search and rename boxes (the first stops of Tab from the page's top).

Why: Gradio's theme takes the outline off its inputs and marks focus only by a faint border colour, so a person
moving with Tab could not see where they were (issue 31). The outline is drawn on the control's frame while the
input inside it has focus (`:focus-within`), in the theme's accent colour, so it shows in light and dark mode.
The message box's outline is drawn inside its frame: the form around it clips its overflow at the frame's edge, so
an outline outside it was computed but never painted. A chat of the side list reached with the keyboard
(ui/web/gradio_dom.py CHAT_LIST_KEYS_JS) has it on its row, inside the row (the list clips its overflow), and only
for the keyboard's focus (`:focus-visible`): a row clicked gets none. The open chat's row is filled with the
accent colour, so its outline takes the text colour (an accent one was computed but could not be seen).
"""
from __future__ import annotations

#: The controls, by their element ids (ui/layout.py, ui/panels/approval_panel.py, ui/panels/history_layout.py).
FOCUSED = ("#task-input", "#model-picker .wrap:has(input)", "#approval-mode .wrap:has(input)", "#chat-search",
           "#chat-title")

CSS = ", ".join(f"{selector}:focus-within" for selector in FOCUSED) + """ {
    outline: 3px solid var(--color-accent) !important; outline-offset: 2px; }
#task-input:focus-within { outline-offset: -3px; }
#chat-list label:has(> input:focus-visible) { outline: 3px solid var(--color-accent) !important;
    outline-offset: -3px; }
#chat-list label:has(> input:checked:focus-visible) { outline-color: var(--body-text-color) !important; }
"""
