"""The panels around the chat: approvals (human in the loop), the saved-chats sidebar, the files panel."""
