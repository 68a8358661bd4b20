"""AgentDeck's web workbench: the Gradio app, its sessions, the streaming path from events to the chat,
the panels. Depends on `tools` and `agents`, never the other way round (tests/test_layers.py)."""
