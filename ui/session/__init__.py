"""One browser tab's session and what it runs: the session, the registry of live sessions and its reaper, the chat
lease between tabs, which sessions have a page open, a run's event stream, stopping, and paused decisions."""
