"""The page's DOM as Gradio renders it, in JavaScript: each snippet here knows Gradio's markup (written for the
versions gradio_compat.py names, split out of it by concept).

- The message box lock: an observer, because Gradio re-renders the textarea (ui/web/input_lock.py).
- Closing the Sidebar on phones and keeping the approval panel in view (ui/web/responsive.py).
- Taking over the × of a read-only File (ui/panels/files.py).
- The chat's loading state and following its output (ui/web/chat_view.py).
Still outside: CSS selectors on Gradio's markup in the panels' CSS strings (ui/layout.py gathers them).
"""
from __future__ import annotations

# The chat's scroller is the element with role=log inside #chat (ui/web/chat_view.py).
#: Keeps the chat's scroller at the bottom when its content grows, unless the person scrolled away from it.
FOLLOW_OUTPUT_JS = """
() => {
  const follow = (log) => {
    if (log.adFollow) return;
    log.adFollow = true;
    let pinned = true;
    const atBottom = () => log.scrollTop + log.clientHeight >= log.scrollHeight - 80;
    log.addEventListener('scroll', () => { pinned = atBottom(); }, {passive: true});
    const sizes = new ResizeObserver(() => { if (pinned && !atBottom()) log.scrollTop = log.scrollHeight; });
    log.adPin = () => { pinned = true; log.scrollTop = log.scrollHeight; };  // see PIN_CHAT_END_JS
    const watch = () => { for (const child of log.children) sizes.observe(child); };
    new MutationObserver(watch).observe(log, {childList: true});
    watch();
  };
  let tries = 0;
  const attach = () => {
    const chat = document.querySelector('#chat');
    if (!chat) return (++tries < 200) && setTimeout(attach, 50);
    const find = () => { const log = chat.querySelector('[role=log]'); if (log) follow(log); };
    new MutationObserver(find).observe(chat, {childList: true, subtree: true});
    find();
  };
  attach();
}
"""

#: The person pressed Stop: follow the chat to its end again, wherever they had scrolled (the end of the run, the
#: "Stopped" note, comes there; found by a review: stopped at a decision read higher up, the chat stayed there).
PIN_CHAT_END_JS = """() => {
  const log = document.querySelector('#chat [role=log]');
  if (log && log.adPin) log.adPin();
  return [];
}"""

# The page re-renders the box's textarea when its value is updated (each run clears it), which re-enables it;
# so the lock is a flag on the box's container, and an observer puts `disabled` back while the flag is set.
LOCK_JS = """() => {
  const wrap = document.querySelector('#task-input');
  if (!wrap) return [];
  wrap.dataset.adLocked = '1';
  const hold = () => {
    const box = wrap.querySelector('textarea');
    if (box && wrap.dataset.adLocked && !box.disabled) { box.disabled = true; box.blur(); }
  };
  if (!wrap.adLockObserver) {
    wrap.adLockObserver = new MutationObserver(hold);
    wrap.adLockObserver.observe(wrap, {subtree: true, childList: true, attributes: true,
                                       attributeFilter: ['disabled']});
  }
  hold();
  return [];
}"""
UNLOCK_JS = """() => {
  const wrap = document.querySelector('#task-input');
  if (!wrap) return [];
  delete wrap.dataset.adLocked;
  const box = wrap.querySelector('textarea');
  if (box) box.disabled = false;
  return [];
}"""
#: The same pair for an event that may be refused because a run already holds the box (Retry, Edit's Send): it
#: locks only a free box, and unlocks only a box it locked, so a refusal never frees the box while a run streams.
LOCK_IF_FREE_JS = LOCK_JS.replace("  wrap.dataset.adLocked = '1';",
                                  "  if (wrap.dataset.adLocked) return [];\n  wrap.dataset.adLocked = 'resend';")
UNLOCK_OWN_JS = UNLOCK_JS.replace("  delete wrap.dataset.adLocked;",
                                  "  if (wrap.dataset.adLocked !== 'resend') return [];\n"
                                  "  delete wrap.dataset.adLocked;")


#: At most this wide (CSS px), the chats sidebar starts closed (ui/web/responsive.py).
NARROW_MAX_PX = 768
#: Gradio's Sidebar has no "closed at start" option: on narrow screens its toggle button is clicked once.
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


#: On a narrow screen the open sidebar covers the whole page: a chat chosen in it is shown behind it, so the
#: sidebar closes (its toggle clicked, as at start) once a chat is chosen.
CLOSE_SIDEBAR_NOW_JS = f"""
() => {{
  if (!window.matchMedia('(max-width: {NARROW_MAX_PX}px)').matches) return;
  const sidebar = document.querySelector('#history-sidebar');
  const toggle = sidebar && sidebar.querySelector('button.toggle-button');
  if (toggle && sidebar.classList.contains('open')) toggle.click();
}}
"""


#: A chat checked in the side list is not always the chat the tab shows: the list's updates come from events
#: that finish in any order, and one computed before New chat (a run's refresh) can land after it. A click on a
#: checked radio sends no `select`, so the click to go back to that chat was lost (a full run's failure). At the
#: press (a pointer's, or Space on it), a checked choice is unchecked, so the click checks it again and Gradio
#: sends the choice; the server leaves a chat already open as it is (ui/panels/history.py `open_chat`). A press
#: that ends in no click on that row (dragged off) puts the check back.
CHOSEN_CHAT_CLICKABLE_JS = """
() => {
  if (window.adChosenChatClickable) return;
  window.adChosenChatClickable = true;
  let pressed = null;
  const press = (target) => {
    const label = target.closest && target.closest('#chat-list label');
    const input = label && label.querySelector('input[type=radio]');
    if (!input || !input.checked || input.disabled) return;
    input.checked = false;
    pressed = input;
  };
  document.addEventListener('pointerdown', (event) => press(event.target), true);
  document.addEventListener('keydown', (event) => { if (event.key === ' ') press(event.target); }, true);
  // Only a click on that chat's own row re-checks it: one ending elsewhere (pressed, dragged off, released)
  // goes to what holds both points, and the check is put back below.
  document.addEventListener('click', (event) => {
    if (pressed && event.target.closest && event.target.closest('label') === pressed.closest('label')) {
      pressed = null;
    }
  }, true);
  const restore = () => setTimeout(() => {
    if (pressed && !pressed.checked) pressed.checked = true;
    pressed = null;
  }, 400);
  document.addEventListener('pointerup', restore, true);
  document.addEventListener('pointercancel', restore, true);
  document.addEventListener('keyup', (event) => { if (event.key === ' ') restore(); }, true);
}
"""


#: The side list by keyboard. Gradio names each radio of a Radio alone, so the browser's arrow keys (which move
#: within a group of one name) moved nowhere, and Tab stopped at every chat. Here Tab stops at the list once, on
#: the chat the keys last reached (else the checked one, else the first: a roving tabindex); Up/Down (Left/Right,
#: Home/End) move the focus between chats without opening them; Enter opens the focused chat, as Space does (the
#: browser's own; on the checked chat, CHOSEN_CHAT_CLICKABLE_JS). The arrows only move: opening a chat is a server
#: round trip that re-runs its code to rebuild its variables, is refused while a run goes on, and on a phone
#: closes the sidebar, so arrowing past three chats would open three. A list drawn again while it has the focus
#: (a chat opened updates it) gives the focus back to the chat it was on.
CHAT_LIST_KEYS_JS = """
() => {
  if (window.adChatListKeys) return;
  window.adChatListKeys = true;
  const moves = {ArrowDown: 1, ArrowRight: 1, ArrowUp: -1, ArrowLeft: -1, Home: -Infinity, End: Infinity};
  let reached = null;  // the value of the chat the keyboard is on, or was when the focus left the list
  let holding = false;  // the focus is in the list
  const inList = (el) => !!(el && el.closest && el.closest('#chat-list'));
  const radios = () => [...document.querySelectorAll('#chat-list input[type=radio]')].filter((i) => !i.disabled);
  const rove = () => {
    const all = radios();
    const stop = all.find((i) => i.value === reached) || all.find((i) => i.checked) || all[0];
    for (const input of all) {
      const index = input === stop ? '0' : '-1';
      if (input.getAttribute('tabindex') !== index) input.setAttribute('tabindex', index);
    }
    const lost = !document.activeElement || document.activeElement === document.body;
    if (holding && stop && lost) stop.focus({preventScroll: true});
  };
  document.addEventListener('focusin', (event) => {
    holding = inList(event.target);
    if (holding) { reached = event.target.value; rove(); }
  }, true);
  document.addEventListener('pointerdown', (event) => { if (!inList(event.target)) holding = false; }, true);
  document.addEventListener('input', (event) => { if (inList(event.target)) { reached = event.target.value; rove(); } },
                            true);
  document.addEventListener('keydown', (event) => {
    const input = event.target;
    if (!inList(input) || input.type !== 'radio' || event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === 'Enter') {
      event.preventDefault();
      if (event.repeat) return;
      input.checked = false;  // a click on a checked radio sends no choice
      input.click();
      return;
    }
    const all = radios(), at = all.indexOf(input);
    if (!(event.key in moves) || at < 0 || event.shiftKey) return;
    event.preventDefault();  // the page would scroll
    const next = all[Math.min(all.length - 1, Math.max(0, at + moves[event.key]))];
    reached = next.value;
    rove();
    next.focus();
  }, true);
  let tries = 0;
  const attach = () => {
    const list = document.querySelector('#chat-list');
    if (!list) return (++tries < 200) && setTimeout(attach, 50);
    new MutationObserver(rove).observe(list, {childList: true, subtree: true});
    rove();
  };
  attach();
}
"""


#: Gradio's × on a file of a read-only File only drops it from the browser's list, without telling the server.
#: This listener (capture phase, so it runs before Gradio's) takes the click instead: it hands the file's
#: row (index and name) to a hidden button's event, whose handler asks for confirmation. Gradio 6.31 draws no ×
#: for a list of one file, so a lone file gets one of the same markup (a file the agent wrote could not be deleted).
INTERCEPT_JS = """
() => {
  if (window.agentdeckFilesRemove) return;
  window.agentdeckFilesRemove = true;
  document.addEventListener('click', (event) => {
    const button = event.target.closest && event.target.closest('#files-panel button.label-clear-button');
    if (!button) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    const row = button.closest('tr');
    const rows = Array.from(document.querySelectorAll('#files-panel tr.file'));
    const cell = row && row.querySelector('td.filename');
    window.agentdeckFileToRemove = rows.indexOf(row) + ':' + (cell ? cell.getAttribute('aria-label') : '');
    const ask = document.querySelector('#file-remove-ask');
    if (ask) ask.click();
  }, true);
  // Gradio draws the × only when the list has two files or more: a lone file gets one in the same markup.
  // Once a second file comes, Gradio draws its own in every row and keeps the lone file's row as it was, so
  // ours goes (that row showed two ×).
  const addLoneRemove = () => {
    const rows = document.querySelectorAll('#files-panel tr.file');
    if (rows.length !== 1) {
      document.querySelectorAll('#files-panel td.ad-lone-remove').forEach((cell) => cell.remove());
      return;
    }
    if (rows[0].querySelector('button.label-clear-button')) return;
    const cell = document.createElement('td');
    cell.className = 'ad-lone-remove';
    const button = document.createElement('button');
    button.className = 'label-clear-button';
    button.setAttribute('aria-label', 'Remove this file');
    button.textContent = '×';
    cell.appendChild(button);
    rows[0].appendChild(cell);
  };
  new MutationObserver(addLoneRemove).observe(document.body, {childList: true, subtree: true});
  addLoneRemove();
}
"""
ASK_JS = "(current) => [window.agentdeckFileToRemove || '']"


#: Gradio's Chatbot shows its placeholder (the welcome) whenever its value is empty, and the page starts with an
#: empty chat until the load event reopens this browser's chat, so a second tab flashed the welcome for the
#: seconds a saved chat takes to come back (and a click in the side list kept it while the chat opened). The
#: page's <html> carries `ad-chat-shown` once its load event has ended, and `ad-chat-opening` from a change of
#: the side list's choice until the open event has ended; ui/web/chat_view.py shows "Loading…" instead of the
#: welcome meanwhile. The change is caught in the DOM: Gradio runs a JavaScript listener of the list's select
#: event some 100 ms after the click, the welcome still on screen.
CHAT_SHOWN_JS = "() => { document.documentElement.classList.add('ad-chat-shown'); return []; }"
CHAT_OPENING_JS = """
() => {
  if (window.adChatOpening) return;
  window.adChatOpening = true;
  document.addEventListener('change', (event) => {
    if (event.target.closest && event.target.closest('#chat-list')) {
      document.documentElement.classList.add('ad-chat-opening');
    }
  }, true);
}
"""
CHAT_OPENED_JS = "() => { document.documentElement.classList.remove('ad-chat-opening'); return []; }"

#: The approval panel appears under the chat while the page is scrolled to the message box, so the step it asks
#: about was above the screen on a phone, and at 1440x900 a plan review's buttons were below it (issue 31). When a
#: plan or an action starts waiting (its card is drawn), the page scrolls so the panel's bottom meets the screen's
#: bottom and the chat above it shows the step, or, where the panel and ⏹ Stop under the message box fit on the
#: screen together with 30% of it left to the chat, Stop's bottom (a tab watching another tab's run stops it from
#: here: its Stop was below the fold, at y≈981 at 1440x900); again whenever the panel changes its size (the code
#: editor draws a moment later, later still on a loaded machine), until the person scrolls, types or clicks
#: themselves or the card goes: their own scrolling is never fought.
APPROVAL_IN_VIEW_JS = """
() => {
  if (window.adApprovalInView) return;
  window.adApprovalInView = true;
  let shown = null;
  let sizes = null;
  const stop = () => { if (sizes) { sizes.disconnect(); sizes = null; } };
  for (const kind of ['wheel', 'touchmove', 'keydown', 'mousedown']) {
    window.addEventListener(kind, stop, {capture: true, passive: true});
  }
  const align = (panel) => {
    const box = panel.getBoundingClientRect();
    if (!(box.height > 0 && box.height <= window.innerHeight)) return;
    const stop = document.querySelector('#stop-btn');
    const end = stop && stop.offsetParent ? stop.getBoundingClientRect().bottom : box.bottom;
    // Stop too only where the chat above still keeps 30% of the screen (the step the panel asks about shows there)
    const bottom = end > box.bottom && end - box.top <= window.innerHeight * 0.7 - 8 ? end : box.bottom;
    window.scrollBy(0, bottom - window.innerHeight + 4);
  };
  const check = () => {
    const card = document.querySelector('#approval-card, #plan-review');
    const panel = card && card.closest('#approval-panel');
    if (!panel || card === shown) { if (!panel) { shown = null; stop(); } return; }
    shown = card;
    stop();
    sizes = new ResizeObserver(() => align(panel));
    sizes.observe(panel);
    requestAnimationFrame(() => align(panel));
  };
  new MutationObserver(check).observe(document.body, {childList: true, subtree: true});
  check();
}
"""

#: The status line's running time (ui/chat/status_line.py `running_time`) counts on in the page between updates,
#: from the run's start (its `ad-since-<ms>` class, from its events): every tab on the run shows the same time,
#: whenever its updates come (a tab watching another tab's run showed the time its page load read, until its
#: stream began). The browser's clock is taken as the server's unless they differ by more than 2 s: the least
#: difference seen between the browser's clock and a line's `ad-now-<ms>` (a line reaches the page late, never
#: early; on a loaded machine the page load's line came 3 s late, read once it made a watching tab 3 s behind).
#: Tabs on one machine then agree to the tenth of a second.
ELAPSED_JS = """
() => {
  if (window.adElapsed) return;
  window.adElapsed = true;
  let least = Infinity;
  const mark = (el, name) => {
    const found = [...el.classList].find(c => c.startsWith(name));
    return found ? parseInt(found.slice(name.length), 10) / 1000 : NaN;
  };
  window.adTickElapsed = () => {
    for (const el of document.querySelectorAll('#run-status .ad-elapsed')) {
      const since = mark(el, 'ad-since-'), sent = mark(el, 'ad-now-'), here = Date.now() / 1000;
      if (!isFinite(since) || !isFinite(sent)) continue;
      least = Math.min(least, here - sent);
      const text = Math.max(0, here - (Math.abs(least) > 2 ? least : 0) - since).toFixed(1);
      if (el.textContent !== text) el.textContent = text;
    }
  };
  window.adClockLeast = () => least;  // the least lateness seen (s): the tests wait for a timely line
  setInterval(window.adTickElapsed, 100);
}
"""
