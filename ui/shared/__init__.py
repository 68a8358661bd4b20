"""What several app replicas share: saved chats' files (`blobs`) and short-lived state (`state`)."""
