"""From agent events to the chat in the browser: rendering each event, the chat tree, Markdown that is safe to show,
what each streamed update sends, and the files the browser may fetch."""
